"""Solve a built model deterministically and report status, objective, bound and gap."""

from __future__ import annotations

import time
from dataclasses import dataclass

from ortools.sat.python import cp_model

from planner.errors import PlannerError

# One worker and a deterministic time limit: the same problem gives the same plan on
# any machine (cpsat-notes: several free-running workers with a wall-clock limit gave
# three plans in three runs). Measured on the example problems, one worker was also
# faster than 2-8 interleaved workers (benchmarks/README.md).
WORKERS = 1
DEFAULT_DETERMINISTIC_LIMIT = 60.0


@dataclass
class Solved:
    status: str  # optimal | feasible | infeasible | unknown
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


def solve(model: cp_model.CpModel, time_limit_s: float | None = None, workers: int = WORKERS) -> Solved:
    problem = model.validate()
    if problem:
        raise PlannerError(f"internal error: the optimisation model is invalid: {problem}")
    solver = cp_model.CpSolver()
    p = solver.parameters
    p.num_workers = workers
    p.interleave_search = workers > 1
    p.random_seed = 0
    # Measured on problems/ and the large benchmark: the stronger LP (level 2) closes
    # gaps on many-service problems far sooner; lighter probing saves presolve time.
    p.linearization_level = 2
    p.cp_model_probing_level = 1
    p.max_deterministic_time = time_limit_s or DEFAULT_DETERMINISTIC_LIMIT
    p.log_search_progress = False
    start = time.perf_counter()
    code = solver.solve(model)
    seconds = time.perf_counter() - start
    status = {
        cp_model.OPTIMAL: "optimal",
        cp_model.FEASIBLE: "feasible",
        cp_model.INFEASIBLE: "infeasible",
        cp_model.MODEL_INVALID: "invalid",
    }.get(code, "unknown")
    if status == "invalid":
        raise PlannerError("internal error: CP-SAT reports the model invalid")
    found = status in ("optimal", "feasible")
    return Solved(
        status=status,
        solver=solver,
        objective=solver.objective_value if found else 0.0,
        bound=solver.best_objective_bound if found else 0.0,
        seconds=seconds,
    )
