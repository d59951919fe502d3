"""What every check shares: tolerances and when a server is in service."""

from __future__ import annotations

from planner.schema.plan import Plan
from planner.schema.problem import Problem

TOL_USD = 1.0


REL = 1e-6


def close(a: float, b: float, tol: float = TOL_USD) -> bool:
    return abs(a - b) <= max(tol, REL * max(abs(a), abs(b)))


def in_service(bought_year: int, op_year: int, life: int | None) -> bool:
    """A server bought in cash-flow year y runs operating years y+1 .. y+life."""
    return bought_year < op_year <= bought_year + (life or 10**6)


def life_of(problem: Problem, plan: Plan) -> int | None:
    by_year = any(r.year is not None for r in plan.inference) or any(r.year for r in plan.servers)
    return problem.finance.hardware_lifetime_years if by_year else None
