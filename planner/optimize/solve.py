"""Solve a built model deterministically and report status, objective, bound and gap."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

from ortools.sat.python import cp_model

from planner.errors import PlannerError

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
DEFAULT_DETERMINISTIC_LIMIT = 60.0

SolveStatus = Literal["optimal", "feasible", "infeasible", "unknown"]


@dataclass
class Solved:
    status: SolveStatus
    solver: cp_model.CpSolver
    objective: float
    bound: float
    seconds: float

    @property
    def gap(self) -> float | None:
        if self.status not in ("optimal", "feasible"):
            return None
        if self.objective == 0:
            return 0.0
        return max(0.0, (self.objective - self.bound) / abs(self.objective))

    def value(self, expr: cp_model.LinearExprT) -> int:
        return int(self.solver.value(expr))


def solve(
    model: cp_model.CpModel, time_limit_s: float | None = None, workers: int = WORKERS, lb_tree_search: bool = False
) -> Solved:
    """``lb_tree_search``: CP-SAT's objective lower-bound tree search, for routing-only models
    (request-size mixes): it proves 10x10-bucket Mélange instances optimal in about a second
    where the default search took up to 30 s; on scheduling models it is far slower."""
    problem = model.validate()
    if problem:
        raise PlannerError(f"internal error: the optimisation model is invalid: {problem}")
    limit = time_limit_s or DEFAULT_DETERMINISTIC_LIMIT
    start = time.perf_counter()
    # No presolve probing on small models: it halves their solve (startup 0.49 -> 0.24 s);
    # large ones reach a better incumbent with it (measured on benchmarks/bench_large.py).
    probing = 0 if len(model.proto.variables) < SMALL_MODEL_VARIABLES else 1
    first = _run(model, min(limit, FIRST_PHASE), workers, probing=probing, lb_tree_search=lb_tree_search)
    rest = limit - first.solver.deterministic_time
    if first.status in ("optimal", "infeasible") or rest <= 0.1 or workers > 1:
        first.seconds = time.perf_counter() - start
        return first
    if first.status == "feasible":
        _hint_from(model, first.solver)
    second = _run(model, rest, PORTFOLIO_WORKERS)
    model.clear_hints()
    best = second if _better(second, first) else first
    best.seconds = time.perf_counter() - start
    if best is first and second.status in ("optimal", "feasible"):
        best.bound = max(first.bound, second.bound)
    return best


def _better(a: Solved, b: Solved) -> bool:
    if a.status not in ("optimal", "feasible"):
        return False
    if b.status not in ("optimal", "feasible"):
        return True
    return a.status == "optimal" or a.objective < b.objective


def _hint_from(model: cp_model.CpModel, solver: cp_model.CpSolver) -> None:
    model.clear_hints()
    for i in range(len(model.proto.variables)):
        var = model.get_int_var_from_proto_index(i)
        model.add_hint(var, solver.value(var))


def _run(model: cp_model.CpModel, limit: float, workers: int, probing: int = 1, lb_tree_search: bool = False) -> Solved:
    solver = cp_model.CpSolver()
    p = solver.parameters
    p.num_workers = workers
    p.interleave_search = workers > 1
    p.random_seed = 0
    # Measured on problems/ and the large benchmark: the stronger LP (level 2) closes
    # gaps on many-service problems far sooner; lighter probing saves presolve time.
    p.linearization_level = 2
    p.optimize_with_lb_tree_search = lb_tree_search and workers == 1
    p.cp_model_probing_level = probing
    p.max_deterministic_time = limit
    p.log_search_progress = False
    code = solver.solve(model)
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
    )
