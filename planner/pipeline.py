"""One problem in, one plan out: load -> options -> CP-SAT -> plan -> verify.

A time limit bounds the whole run (``run_budget``): the plan's solve, its tie-breaks and a
diagnosis share it. The answers, by exit code: a plan (0); infeasibility proven, by the options
or by the solver (1), with whatever diagnosis the time left allowed (it says so when it was cut
short); neither a plan nor a proof (``TimeLimitError``, 3).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Protocol

from ortools.sat.python import cp_model

from planner.assemble import assemble_plan, finance_assumptions
from planner.catalog import Catalog
from planner.context import Context, prepare
from planner.errors import OutOfTime, TimeLimitError
from planner.io.problem_io import LoadedProblem
from planner.optimize.budget import budget_spent, cuttable, run_budget, settle
from planner.optimize.built import Built
from planner.optimize.model import build
from planner.optimize.solve import START_PHASE, Solved, covers, solve, solved_values
from planner.options.types import WorkloadOptions
from planner.schema.plan import Diagnosis, Plan
from planner.schema.problem import Problem

NO_PLAN = "No plan meets every requirement at once."
CUT_SHORT = (
    "The time limit ran out during this diagnosis: a smaller conflict or more fixes may exist (raise --time-limit)."
)


def plan_problem(loaded: LoadedProblem, time_limit_s: float | None = None, base: Catalog | None = None) -> Plan:
    with run_budget(time_limit_s):
        ctx = prepare(loaded, base)
        return plan_context(ctx, time_limit_s)


class Watcher(Protocol):
    """Told of the first plan the search starts from, and of the plan it ends on (the command line
    simulates the first meanwhile: ``simulate.speculate``)."""

    def started(self, ctx: Context, built: Built, solved: Solved) -> None: ...

    def ended(self, built: Built, solved: Solved) -> None: ...


def plan_context(
    ctx: Context, time_limit_s: float | None = None, keep_start: bool = False, watcher: Watcher | None = None
) -> Plan:
    return certified_plan(ctx, time_limit_s, keep_start, watcher)[0]


def certified_plan(
    ctx: Context, time_limit_s: float | None = None, keep_start: bool = False, watcher: Watcher | None = None
) -> tuple[Plan, int | None]:
    """The plan, and the least capital budget (model units) for which it is certainly the plan
    too: the least-TCO plan found first and the plan itself both fit, the first was proven
    optimal and every tie-break proven. A smaller budget that still holds both only removes
    plans, none better, so a fresh solve would end on a plan equal in every tie-break (what-if
    grids use it instead of solving again). None: not certified.

    The search starts from ``ctx.start`` when it names every variable of the model (a start
    orders the search; the plan is the same). ``keep_start``: set ``ctx.start`` to this plan's
    values, for re-solves of the problem and its variants (explanations, what-if grids).

    ``watcher``: told of the first plan the search starts from, while the search goes on, and of
    the plan it ends on (the command line simulates the first meanwhile: ``simulate.speculate``)."""
    with run_budget(time_limit_s):
        return _plan(ctx, time_limit_s, keep_start, watcher)


# A base's solve for a start, deterministic seconds: its best plan by then starts the variants as
# well as its optimum would on most grids, and a hard base does not hold every worker back long.
START_LIMIT_S = 5.0


def solve_start(ctx: Context, time_limit_s: float | None = None) -> None:
    """Set ``ctx.start`` from a solve of its model alone (no plan, no tie-breaks, no diagnosis),
    within ``START_LIMIT_S``: the base of a what-if grid or of scenarios, where their solves start."""
    time_limit_s = min(time_limit_s or START_LIMIT_S, START_LIMIT_S)
    with run_budget(time_limit_s):
        if not all(w.feasible for w in ctx.workloads):
            return
        built = build(ctx.problem, ctx.catalog, ctx.workloads, kept=ctx.kept)
        solved = _solved(built, ctx.problem, time_limit_s, ctx.start, ties=False)
        if solved.status in ("optimal", "feasible"):
            ctx.start = solved_values(built.model, solved)


def _plan(
    ctx: Context, time_limit_s: float | None, keep_start: bool, watcher: Watcher | None
) -> tuple[Plan, int | None]:
    p = ctx.problem
    empty = [w for w in ctx.workloads if not w.feasible]
    if empty:
        settle()  # no option at all for a workload: infeasible, proven by the enumeration
        return _infeasible(p, _no_option_diagnosis(ctx, empty, time_limit_s)), None
    built = build(p, ctx.catalog, ctx.workloads, kept=ctx.kept)
    on_start = None if watcher is None else partial(watcher.started, ctx, built)
    solved = _solved(built, p, time_limit_s, ctx.start, on_start=on_start)
    if solved.status == "infeasible":
        return _infeasible(p, _diagnosis(ctx, time_limit_s)), None
    if solved.status not in ("optimal", "feasible"):
        raise TimeLimitError()
    if watcher is not None:
        watcher.ended(built, solved)
    from planner.verify import verify

    plan = assemble_plan(ctx, built, solved)
    plan.verification = verify(p, ctx.catalog, plan)
    if keep_start:
        ctx.start = solved_values(built.model, solved)
    if solved.status != "optimal" or not solved.ties_proven or solved.cheapest_capex is None:
        return plan, None
    return plan, max(solved.cheapest_capex, solved.value(built.capex))


def _solved(
    built: Built,
    p: Problem,
    time_limit_s: float | None,
    start: dict[str, int] | None,
    ties: bool = True,
    on_start: Callable[[Solved], None] | None = None,
) -> Solved:
    """The least-TCO solve, then the tie-breaks (equal TCO: fewer GPU types, less power, earlier starts)."""
    routing_only = any(s.mix for s in p.inference) and not p.training and built.periods == 1
    covered = start is not None and covers(built.model, start)
    starts, start_limit_s = (None, START_PHASE) if covered else _start(built)
    solved = solve(
        built.model,
        time_limit_s,
        lb_tree_search=routing_only,
        start_from=starts,
        start_values=start if covered else None,
        escalate=built.later_cuts,
        start_limit_s=start_limit_s,
        on_start=on_start,
    )
    if ties and solved.status in ("optimal", "feasible") and not budget_spent():
        from planner.optimize.tiebreak import break_ties

        solved = break_ties(built, solved)
    return solved


def _start(built: Built) -> tuple[cp_model.CpModel | list[cp_model.CpModel] | None, float]:
    """The models whose plans start the search, and each one's limit: a fleet's consolidated
    starts, or a small model restricted to its start types."""
    from planner.optimize.consolidate import start_model
    from planner.optimize.type_start import TYPE_START_DET_S, type_start

    fleet = start_model(built)
    if fleet is not None:
        return fleet, START_PHASE
    return type_start(built), TYPE_START_DET_S


def _diagnosis(ctx: Context, time_limit_s: float | None) -> Diagnosis:
    """Which limits conflict and how far each must move, in the time the run has left."""
    from planner.explain.diagnose import diagnose

    try:
        with cuttable():
            found = diagnose(ctx, time_limit_s)
    except OutOfTime:
        return Diagnosis(summary=[NO_PLAN, CUT_SHORT])
    if budget_spent():
        found = found.model_copy(update={"summary": [*found.summary, CUT_SHORT]})
    return found


def _no_option_diagnosis(ctx: Context, empty: list[WorkloadOptions], time_limit_s: float | None) -> Diagnosis:
    """Workloads no GPU can run; when they are all training jobs, how far their deadlines must move."""
    from planner.explain.diagnose import no_option_diagnosis

    found = no_option_diagnosis(ctx, empty)
    if not all(w.kind == "training" for w in empty):
        return found
    moved = _diagnosis(ctx, time_limit_s)
    return found.model_copy(
        update={
            "summary": found.summary + moved.summary[1:],
            "fixes": moved.fixes,
            "combined_fix": moved.combined_fix,
            "conflict": moved.conflict or found.conflict,
        }
    )


def _infeasible(problem: Problem, diagnosis: Diagnosis) -> Plan:
    return Plan(
        problem=problem.name,
        status="infeasible",
        gap=None,
        diagnosis=diagnosis,
        assumptions=finance_assumptions(problem),
    )
