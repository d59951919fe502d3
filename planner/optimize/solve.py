"""Solve a built model deterministically and report status, objective, bound and gap.

Every solve keeps to its run's budget (``planner.optimize.budget``: ``--time-limit`` bounds the
whole run, not each solve).

Every solve runs in a helper thread while the calling thread waits in short slices, so Ctrl-C
(or the deadline) stops the search at once instead of when CP-SAT returns; CP-SAT is told to
leave SIGINT alone (it would otherwise stop the search as if the time limit had been reached,
and leave SIGINT at its default action afterwards).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from ortools.sat.python import cp_model

from planner.errors import OutOfTime, PlannerError
from planner.optimize import budget as run
from planner.optimize import isolated
from planner.optimize.budget import budget_spent
from planner.optimize.budget import cuttable as cuttable  # the run budget's names, where they used to be
from planner.optimize.budget import detach_budget as detach_budget
from planner.optimize.budget import run_budget as run_budget
from planner.optimize.stoppable import stoppable

# Deterministic time limits only, and a fixed search: the same problem gives the same
# plan on any machine (cpsat-notes: several free-running workers with a wall-clock
# limit gave three plans in three runs). Small problems are fastest with one worker;
# large ones need the portfolio (LNS) that only several workers run, so a solve that
# is not proven within FIRST_PHASE continues with interleaved workers from the
# incumbent (measured: benchmarks/README.md).
WORKERS = 1
PORTFOLIO_WORKERS = 4
FIRST_PHASE = 5.0
SMALL_MODEL_VARIABLES = 5000
SMALL_MODEL_PRESOLVE_PASSES = 1
DEFAULT_DETERMINISTIC_LIMIT = 60.0
# each start's solve (consolidate): the fixed start takes 0.8-2 det. s on bench_large, the start
# choosing among mixes proves its optimum in 2.6-4.5 det. s (seeds 11, 7) and seed 13 improves to
# 25 det. s (23.58 -> 23.36M): the whole search after it gained less in the same time
START_PHASE = 25.0
# CP-SAT's cut effort: 0 adds its base cuts only. Measured (benchmarks/README.md): the LP
# re-solves faster, the search explores more and proves more: startup's solve 0.68 -> 0.40 s,
# bench_large's gaps at 60 det. s 9.6 / 9.4 / 11.0% -> 6.2 / 6.0 / 6.0% (seeds 7 / 11 / 13; the floor
# solves use it too: ``floors.solved_alone``).
CUT_LEVEL = 0
# Interleaved workers share the objective's bounds with one another; in CP-SAT 9.15 that exchange
# depends on the machine's load: bench_large seed 7 gave $15,410,711 or $15,403,901 in two runs of
# the same model, parameters and hint (the 842nd solve, the second start of consolidate), and two
# copies of that solve run side by side differed at 12 and 25 det. s. With this sharing off the
# copies agreed to the last digit of their deterministic time (benchmarks/README.md, stop 40).
# Not ``share_level_zero_bounds`` instead: with it off, CP-SAT 9.15 crashed (free(): invalid pointer)
# on seed 7 run beside seed 13. The price: seed 13's gap at 60 det. s went 1.46% -> 1.63% (bisected
# to this setting alone, stops 43-44); seed 7 1.49% -> 1.35%.
SHARE_OBJECTIVE_BOUNDS = False
# Learnt clauses (binary and glue) shared between interleaved workers depend on the load too: the
# saved last phase of bench_large seed 11 (20 det. s, the planner's settings) ended with its bound at
# $14,432,348 alone and $14,454,033 with a second copy beside it; with clause sharing off, $14,432,354
# both ways (benchmarks/README.md, stop 55). Binary clauses shared alone held on that phase, but
# not over the whole run: seed 11 ended with its gap at 1.686% alone and 1.781% beside seed 13
# (stop 56).
SHARE_CLAUSES = False

SolveStatus = Literal["optimal", "feasible", "infeasible", "unknown"]


@dataclass
class Solved:
    status: SolveStatus
    solver: cp_model.CpSolver
    objective: float
    bound: float
    seconds: float
    deterministic_s: float = 0.0  # what the solve took (0 for one the run's budget did not allow)
    # the least TCO found, when a simpler plan within the tolerance was chosen over it
    cheapest: float | None = None
    cheapest_gpu_types: int | None = None
    # after the tie-breaks: every stage proven (the plan is the same whatever the search path),
    # and the capital the least-TCO plan found first needs (model units; what-if budget reuse)
    ties_proven: bool = False
    cheapest_capex: int | None = None

    @property
    def gap(self) -> float | None:
        """How far the least TCO found may be from the optimum (the solver's proof; a simpler
        plan's premium over it is reported apart)."""
        if self.status not in ("optimal", "feasible"):
            return None
        least = self.objective if self.cheapest is None else self.cheapest
        if least == 0:
            return 0.0
        return max(0.0, (least - self.bound) / abs(least))

    def value(self, expr: cp_model.LinearExprT) -> int:
        return int(self.solver.value(expr))


def solve(
    model: cp_model.CpModel,
    time_limit_s: float | None = None,
    workers: int = WORKERS,
    lb_tree_search: bool = False,
    start_from: cp_model.CpModel | Sequence[cp_model.CpModel] | None = None,
    start_values: Mapping[str, int] | None = None,
    escalate: Callable[[], None] | None = None,
    start_limit_s: float = START_PHASE,
    on_start: Callable[[Solved], None] | None = None,
) -> Solved:
    """``lb_tree_search``: CP-SAT's objective lower-bound tree search, for routing-only models
    (request-size mixes): it proves 10x10-bucket Mélange instances optimal in about a second
    where the default search took up to 30 s; on scheduling models it is far slower.

    ``start_from``: models with some variables fixed or restricted (``optimize.consolidate``),
    solved in turn, each from the plan before it; the last plan found, each within
    ``start_limit_s``, is a complete hint for the search (the limit covers them all).

    ``start_values``: a solved model's values by variable name (a what-if grid's base plan): when
    they name every variable of this model, they are its hint and ``start_from`` is not solved.
    Measured on the startup grid's ten electricity prices: 15.0 s of solving -> 3.3 s.

    ``escalate``: adds cuts to ``model``, called once when the first phase
    ends unproven, before the search goes on from its plan (``Built.later_cuts``).

    ``on_start``: called with the last start's solve (its values are this model's, by index)
    before the search goes on from it: a caller may work on that plan meanwhile."""
    problem = model.validate()
    if problem:
        raise PlannerError(f"internal error: the optimisation model is invalid: {problem}")
    limit = time_limit_s or DEFAULT_DETERMINISTIC_LIMIT
    start = time.perf_counter()
    try:
        if start_values is not None and _hint_by_name(model, start_values):
            start_from = None
        found: Solved | None = None
        starts = [start_from] if isinstance(start_from, cp_model.CpModel) else list(start_from or [])
        for i, each in enumerate(starts):
            # a later start is searched from the plan before it, by the portfolio (LNS)
            if found is not None:
                _hint_from(each, found.solver)
            small = len(each.proto.variables) < SMALL_MODEL_VARIABLES  # as the search's first phase
            pre = _run(
                each,
                min(limit, start_limit_s),
                workers if i == 0 else PORTFOLIO_WORKERS,
                probing=0 if small else 1,
                presolve_passes=presolve_passes(each),
            )
            limit -= pre.deterministic_s
            if pre.status in ("optimal", "feasible"):
                found = pre
        if found is not None:
            _hint_from(model, found.solver)
            if on_start is not None:
                on_start(found)
        return _solve(model, limit, workers, lb_tree_search, start, escalate)
    finally:
        model.clear_hints()


def _solve(
    model: cp_model.CpModel,
    limit: float,
    workers: int,
    lb_tree_search: bool,
    start: float,
    escalate: Callable[[], None] | None = None,
) -> Solved:
    # No presolve probing on small models: it halves their solve (startup 0.49 -> 0.24 s);
    # large ones reach a better incumbent with it (measured on benchmarks/bench_large.py). One
    # presolve pass on small models: startup 0.261 -> 0.211 det. s, inference-tight-power 0.43 ->
    # 0.36, six generated 2-4-service problems faster or the same but one (benchmarks/README.md).
    # A small model hinted by a start's plan (complete and feasible) skips the hint's repair
    # search (hint_conflict_limit 0): startup 0.289 -> 0.267 s, lab-train-and-serve 0.282 ->
    # 0.268, the examples' plans the same.
    small = len(model.proto.variables) < SMALL_MODEL_VARIABLES
    first = _run(
        model,
        min(limit, FIRST_PHASE),
        workers,
        probing=0 if small else 1,
        lb_tree_search=lb_tree_search,
        presolve_passes=presolve_passes(model),
        hint_conflicts=0 if small and model.proto.has_solution_hint() else None,
    )
    rest = limit - first.deterministic_s
    if first.status in ("optimal", "infeasible") or rest <= 0.1 or workers > 1 or budget_spent():
        first.seconds = time.perf_counter() - start
        return first
    if escalate is not None and not budget_spent():
        # its own solves have their own limits, as a fleet's build's have; the run's deadline may
        # cut it short (each cut is valid alone: those added stay)
        with contextlib.suppress(OutOfTime), cuttable():
            escalate()
    if first.status == "feasible":
        _hint_from(model, first.solver)  # the variables the cuts added are left to the search
    second = _run(model, rest, PORTFOLIO_WORKERS)
    best = second if _better(second, first) else first
    best.seconds = time.perf_counter() - start
    if first.status == "feasible" and second.status in ("optimal", "feasible"):
        best.bound = max(first.bound, second.bound)  # both are proven: the second starts without the first's
    return best


def presolve_passes(model: cp_model.CpModel) -> int | None:
    """``max_presolve_iterations`` for a model: one pass on a small one (None: CP-SAT's default)."""
    return SMALL_MODEL_PRESOLVE_PASSES if len(model.proto.variables) < SMALL_MODEL_VARIABLES else None


def _better(a: Solved, b: Solved) -> bool:
    if a.status not in ("optimal", "feasible"):
        return False
    if b.status not in ("optimal", "feasible"):
        return True
    return a.status == "optimal" or a.objective < b.objective


def _hint_from(model: cp_model.CpModel, solver: cp_model.CpSolver) -> None:
    """Hint every variable of ``model`` with its value in the solver's solution (of this model
    or of one with the same variables first), set on the proto at once: as ``add_hint`` per
    variable would, in index order, in a tenth of the time."""
    values = list(solver.response_proto.solution)[: len(model.proto.variables)]
    set_hint(model, range(len(values)), values)


def set_hint(model: cp_model.CpModel, indices: Iterable[int], values: Iterable[int]) -> None:
    """The model's hint: each variable (by index) at its value, in their order, set on the proto
    at once (``add_hint`` per variable makes the same hint; startup's 1,700 took 0.008 s)."""
    model.clear_hints()
    hint = model.proto.solution_hint
    hint.vars.extend(indices)
    hint.values.extend(values)


def covers(model: cp_model.CpModel, values: Mapping[str, int]) -> bool:
    """Whether ``values`` name every variable of the model: only a complete hint is given (one
    of the services' replicas alone made the startup solves 1.8x slower on average, measured)."""
    return all(v.name in values for v in model.proto.variables)


def _hint_by_name(model: cp_model.CpModel, values: Mapping[str, int]) -> bool:
    """Hint every variable from ``values``; False (and no hint) when they do not cover the model."""
    if not covers(model, values):
        return False
    model.clear_hints()
    for i, v in enumerate(model.proto.variables):
        model.add_hint(model.get_int_var_from_proto_index(i), values[v.name])
    return True


def solved_values(model: cp_model.CpModel, solved: Solved) -> dict[str, int]:
    """A solve's values by variable name: ``start_values`` for a model like this one."""
    return {v.name: solved.value(model.get_int_var_from_proto_index(i)) for i, v in enumerate(model.proto.variables)}


def _run(
    model: cp_model.CpModel,
    limit: float,
    workers: int,
    probing: int = 1,
    lb_tree_search: bool = False,
    presolve_passes: int | None = None,
    hint_conflicts: int | None = None,
) -> Solved:
    solver = cp_model.CpSolver()
    budget = run.current()
    if budget is not None:
        limit = min(limit, budget.deterministic_s)
        if budget.spent():
            return Solved(status="unknown", solver=solver, objective=0.0, bound=0.0, seconds=0.0)
        solver.parameters.max_time_in_seconds = budget.wall_left()
    p = solver.parameters
    p.num_workers = workers
    p.interleave_search = workers > 1
    if workers > 1:
        p.share_objective_bounds = SHARE_OBJECTIVE_BOUNDS
        p.share_binary_clauses = SHARE_CLAUSES
        p.share_glue_clauses = SHARE_CLAUSES
    p.random_seed = 0
    # Measured on problems/ and the large benchmark: the stronger LP (level 2) closes
    # gaps on many-service problems far sooner; lighter probing saves presolve time.
    p.linearization_level = 2
    p.cut_level = CUT_LEVEL
    p.optimize_with_lb_tree_search = lb_tree_search and workers == 1
    p.cp_model_probing_level = probing
    if presolve_passes is not None:
        p.max_presolve_iterations = presolve_passes
    if hint_conflicts is not None:
        p.hint_conflict_limit = hint_conflicts
    p.max_deterministic_time = limit
    p.log_search_progress = False
    p.catch_sigint_signal = False
    code = _search(solver, model, workers)
    if budget is not None:
        budget.deterministic_s -= solver.deterministic_time
    statuses: dict[cp_model.CpSolverStatus, SolveStatus | Literal["invalid"]] = {
        cp_model.OPTIMAL: "optimal",
        cp_model.FEASIBLE: "feasible",
        cp_model.INFEASIBLE: "infeasible",
        cp_model.MODEL_INVALID: "invalid",
    }
    status = statuses.get(code, "unknown")
    if status == "invalid":
        raise PlannerError("internal error: CP-SAT reports the model invalid")
    found = status in ("optimal", "feasible")
    return Solved(
        status=status,
        solver=solver,
        objective=solver.objective_value if found else 0.0,
        bound=solver.best_objective_bound if found else 0.0,
        seconds=0.0,
        deterministic_s=solver.deterministic_time,
    )


def _search(solver: cp_model.CpSolver, model: cp_model.CpModel, workers: int) -> cp_model.CpSolverStatus:
    """Several workers interleave their search in a child process, where a CP-SAT crash in it
    (google/or-tools#5048) is survived by running it again (``optimize.isolated``); one worker's
    search, every small model's, never showed it and stays here."""
    if workers > 1 and isolated.available():
        return isolated.search_in_child(solver, model)
    return stoppable(solver, model)
