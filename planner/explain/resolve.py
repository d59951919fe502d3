"""Solving again for an explanation: a context solved with extra constraints, and a context
with one problem value moved (options derived again when the move can change them)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from planner.assemble import assemble_plan
from planner.context import Context, prepare
from planner.limits.table import every_limit
from planner.optimize.built import Built
from planner.optimize.model import build
from planner.optimize.solve import solve
from planner.schema.plan import Plan


def solve_context(ctx: Context, time_limit_s: float | None, extra: Any = None) -> tuple[Plan | None, Built | None]:
    """Solve a context (optionally with extra constraints on the built model); None when infeasible.
    The search starts from the plan's values (``ctx.start``) when they cover the model: a limit
    moved or an option removed leaves most of the plan as it was."""
    if not all(w.feasible for w in ctx.workloads):
        return None, None
    built = build(ctx.problem, ctx.catalog, ctx.workloads, kept=ctx.kept)
    if extra is not None:
        extra(built)
    solved = solve(built.model, time_limit_s, start_values=ctx.start, escalate=built.later_cuts)
    if solved.status not in ("optimal", "feasible"):
        return None, built
    return assemble_plan(ctx, built, solved), built


def variant_context(ctx: Context, path: str, value: Any) -> Context:
    """The context with one problem value moved; options are rebuilt only when they can change."""
    from planner.io.overrides import variant

    assert ctx.loaded is not None
    loaded = variant(ctx.loaded, {path: value})
    if not moves_options(ctx, path):
        return replace(ctx, problem=loaded.problem, loaded=loaded)
    return prepare(loaded)


def derived_context(ctx: Context, overrides: dict[str, Any]) -> Context:
    """The context with these problem values moved: the options kept when no path can change
    them (demand, money), else prepared again. A budget given or taken away changes which options
    dominate others (``options.dominance``): that is prepared again too."""
    from planner.io.overrides import variant

    assert ctx.loaded is not None
    loaded = variant(ctx.loaded, overrides)
    budget_set = (ctx.problem.finance.budget_usd is None) != (loaded.problem.finance.budget_usd is None)
    if budget_set or any(moves_options(ctx, path) for path in overrides):
        return prepare(loaded)
    return replace(ctx, problem=loaded.problem, loaded=loaded)


# Problem values outside the limits table that leave every option as it was: money only.
# (``finance.rent`` and ``finance.buy`` add or remove options.)
_MONEY_PATHS = ("finance.",)
_OPTION_PATHS = ("finance.rent", "finance.buy")


def moves_options(ctx: Context, path: str) -> bool:
    """Whether moving ``path`` can change which deployment options exist: a limit says so in
    the table (stock, latency targets, deadlines and rack sizes prune options; budget, power,
    racks, demand and the GPU-type cap do not); anything else is derived again to be safe."""
    for fam, lim in every_limit(ctx.problem, ctx.catalog):
        if lim.path is not None and lim.path.lower() == path.lower():
            return fam.prunes_options
    return not path.startswith(_MONEY_PATHS) or path in _OPTION_PATHS
