"""What-if grids: every variant of a problem solved (in worker processes), one summary row
each, and what differs between two plans. The overrides themselves: ``planner.io.overrides``."""

from __future__ import annotations

import contextlib
import math
from typing import Any

from planner import units as u
from planner.errors import InputError
from planner.io.overrides import grid, variant
from planner.io.problem_io import LoadedProblem


def plan_summary(plan: Any) -> dict[str, Any]:
    """The columns a what-if or comparison row shows for one plan."""
    row: dict[str, Any] = {
        "status": plan.status,
        "tco_usd": round(plan.tco_usd, 2) if plan.status != "infeasible" else None,
        "capex_usd": round(plan.capex_usd, 2) if plan.status != "infeasible" else None,
        "opex_usd_per_year": round(plan.opex_usd_per_year, 2) if plan.status != "infeasible" else None,
        "facility_power_kw": plan.facility_power_kw if plan.status != "infeasible" else None,
        "racks": plan.racks if plan.status != "infeasible" else None,
        "gpus": " + ".join(f"{n}x {g}" for g, n in plan.gpus.items()),
        # limits with less than one purchase unit of slack; what binds takes a re-solve (--explain)
        "tight": " ".join(c.name for c in plan.constraints if c.tight),
        "reason": "",
    }
    if plan.status == "infeasible" and plan.diagnosis:
        row["reason"] = " ".join(plan.diagnosis.summary[1:3]).replace("- ", "")
    return row


BUDGET = "finance.budget_usd"


def solve_variant(base: LoadedProblem, overrides: dict[str, Any], time_limit_s: float | None) -> dict[str, Any]:
    """One row of a grid: the swept values and the plan's summary, or the reason there is none."""
    return solve_budgets(base, [overrides], time_limit_s)[0]


def solve_budgets(
    base: LoadedProblem, variants: list[dict[str, Any]], time_limit_s: float | None
) -> list[dict[str, Any]]:
    """Rows for variants that differ in the budget alone, the largest budget first: a plan
    certified for a smaller budget (``pipeline.certified_plan``: the least-TCO plan and the plan
    both fit it, every solve proven) is that budget's plan too, its limits read again; any other
    variant is solved."""
    from planner.errors import PlannerError
    from planner.pipeline import certified_plan

    rows: list[dict[str, Any]] = []
    held: tuple[Any, Any, int] | None = None  # (context, plan, capital it needs)
    for overrides in variants:
        row: dict[str, Any] = dict(overrides)
        budget = overrides.get(BUDGET)
        if held is not None and isinstance(budget, (int, float)) and held[2] <= math.floor(budget * u.MONEY_PER_USD):
            row.update(plan_summary(_rebudgeted(held[0], held[1], overrides)))
            rows.append(row)
            continue
        held = None
        try:
            ctx = _context_for(base, overrides)
            plan, needs = certified_plan(ctx, time_limit_s)
            row.update(plan_summary(plan))
            if needs is not None and isinstance(budget, (int, float)):
                held = (ctx, plan, needs)
        except InputError as exc:
            row.update(status="error", reason=exc.message if not exc.key else f"{exc.key}: {exc.message}")
        except PlannerError as exc:
            row.update(status="error", reason=str(exc))
        rows.append(row)
    return rows


def _rebudgeted(ctx: Any, plan: Any, overrides: dict[str, Any]) -> Any:
    """The plan under another budget: the same purchase and operation, its limits measured again."""
    from planner.limits.measure import measure
    from planner.limits.table import constraint_rows

    problem = ctx.problem.model_copy(
        update={"finance": ctx.problem.finance.model_copy(update={"budget_usd": overrides[BUDGET]})}
    )
    return plan.model_copy(update={"constraints": constraint_rows(problem, ctx.catalog, measure(problem, plan))})


def _solve_in_worker(job: tuple[LoadedProblem, list[dict[str, Any]], float | None]) -> list[dict[str, Any]]:
    return solve_budgets(*job)


def _warm(base: LoadedProblem, time_limit_s: float | None) -> None:
    """Enumerate the base problem's options here first: the workers, forked after, inherit its
    estimates (most of a first enumeration) instead of each making them again, and a variant that
    moves only demand or money derives its context from it (``explain.resolve.derived_context``).
    Then solve the base: its plan (``Context.start``, which derived contexts keep) starts each
    variant's search where it covers the variant's model; every variant's plan is proven as
    before, so its row is the row of a fresh solve (startup grid: 15 s of solving for ten
    electricity prices -> 3.3 s)."""
    from planner.context import prepare
    from planner.errors import PlannerError
    from planner.pipeline import solve_start

    global _warm_context
    with contextlib.suppress(InputError, PlannerError):  # each variant's row says what is wrong with it
        ctx = prepare(base)
        _warm_context = (_fingerprint(base), ctx)
        solve_start(ctx, time_limit_s)


def _fingerprint(base: LoadedProblem) -> str:
    return base.problem.model_dump_json()


def _context_for(base: LoadedProblem, overrides: dict[str, Any]) -> Any:
    """The variant's context: derived from the warm base context when this is its problem."""
    from planner.context import prepare
    from planner.explain.resolve import derived_context

    if _warm_context is not None and _warm_context[0] == _fingerprint(base):
        return derived_context(_warm_context[1], overrides)
    return prepare(variant(base, overrides))


_warm_context: tuple[str, Any] | None = None  # the base problem's context, inherited by forked workers


def budget_groups(variants: list[dict[str, Any]]) -> list[list[int]]:
    """Variants alike but for a numeric budget, largest budget first (each group one job);
    every variant on its own when the budget is not swept or not a number."""
    if not variants or any(not isinstance(v.get(BUDGET), (int, float)) for v in variants):
        return [[i] for i in range(len(variants))]
    groups: dict[str, list[int]] = {}
    for i, v in enumerate(variants):
        key = repr(sorted((k, repr(x)) for k, x in v.items() if k != BUDGET))
        groups.setdefault(key, []).append(i)
    return [sorted(g, key=lambda i: -float(variants[i][BUDGET])) for g in groups.values()]


def run_grid(
    base: LoadedProblem,
    sets: list[tuple[str, list[Any]]],
    time_limit_s: float | None = None,
    progress: Any = None,
    workers: int = 1,
    executor: str = "local",
    address: str | None = None,
) -> list[dict[str, Any]]:
    """Solve every variant; a variant that fails is a row with its reason, not a crash.

    Variants run in worker processes (``workers``) or on Ray (``executor="ray"``), those that
    differ in the budget alone in one job (``solve_budgets``: a certified plan is not solved
    again). Each solve is deterministic on its own and rows come back in grid order, so the
    table is the same whatever ran it.
    """
    from planner.executors import map_ordered

    variants = grid(sets)
    groups = budget_groups(variants)
    sizes = iter([len(g) for g in groups])

    def advance() -> None:
        for _ in range(next(sizes, 1)):
            progress()

    if executor == "local":
        _warm(base, time_limit_s)
    jobs = [(base, [variants[i] for i in g], time_limit_s) for g in groups]
    done = map_ordered(_solve_in_worker, jobs, workers, executor, address, advance if progress else None)
    rows: list[dict[str, Any]] = [{} for _ in variants]
    for g, got in zip(groups, done, strict=True):
        for i, row in zip(g, got, strict=True):
            rows[i] = row
    return rows


def differences(rows: list[dict[str, Any]], label: str = "problem") -> list[str]:
    """What differs between plans, in words: the GPU mix, the tight limits, and the money."""
    if len(rows) < 2:
        return []
    first = rows[0]
    lines = []
    for row in rows[1:]:
        name, base = row.get(label), first.get(label)
        if row.get("status") == "infeasible" or first.get("status") == "infeasible":
            lines.append(f"{name} vs {base}: {row.get('status')} vs {first.get('status')}")
            continue
        parts = []
        if row.get("gpus") != first.get("gpus"):
            parts.append(f"buys {row.get('gpus') or 'nothing'} instead of {first.get('gpus') or 'nothing'}")
        if row.get("tight") != first.get("tight"):
            parts.append(f"tight: {row.get('tight') or 'none'} (was {first.get('tight') or 'none'})")
        for key in ("tco_usd", "capex_usd", "opex_usd_per_year"):
            a, b = row.get(key), first.get(key)
            if isinstance(a, (int, float)) and isinstance(b, (int, float)) and abs(a - b) >= 1:
                parts.append(f"{key} {a - b:+,.0f}")
        lines.append(f"{name} vs {base}: " + ("; ".join(parts) if parts else "the same plan"))
    return lines
