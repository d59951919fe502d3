"""Re-check a plan against the problem without the solver.

Everything is recomputed from the catalog and the performance model: prices,
power, GPU counts, rack fit, network size, capacities, latencies, schedule and
money. Returns the list of violations (empty when the plan holds).
"""

from __future__ import annotations

import math

from planner import limits
from planner.catalog import Catalog
from planner.limits.base import Measured
from planner.limits.table import every_limit, row_limit
from planner.schema.plan import Plan
from planner.schema.problem import Problem
from planner.verify.common import REL, TOL_USD
from planner.verify.disagg import check_kv_links
from planner.verify.hardware import check_finance, check_gpu_usage, check_hardware
from planner.verify.workloads import check_inference, check_training


def verify(problem: Problem, catalog: Catalog, plan: Plan) -> list[str]:
    if plan.status == "infeasible":
        return []
    errs: list[str] = []
    m = Measured()  # the limits' quantities as recomputed here, never as the plan states them
    check_hardware(problem, catalog, plan, errs, m)
    check_gpu_usage(problem, catalog, plan, errs)
    check_training(problem, catalog, plan, errs, m)
    check_inference(problem, catalog, plan, errs, m)
    check_kv_links(catalog, plan, errs)
    check_finance(plan, errs)
    for fam in limits.FAMILIES:  # quantities of families that Measured has no field for
        fam.recompute(problem, catalog, plan, m)
    check_limits(problem, catalog, plan, m, errs)
    return errs


# How far a reported `used` may stand from the recomputed one (the plan rounds to cents,
# watts, thousandths of a millisecond and of a request/s).
USED_TOL = {"usd": TOL_USD, "kw": 0.01, "days": 0.01, "rps": 1e-3, "ms p99": 1e-2}


def check_limits(problem: Problem, catalog: Catalog, plan: Plan, m: Measured, errs: list[str]) -> None:
    """Every named limit holds on the recomputed quantities, and the plan's limits report
    states that very quantity (a report that contradicts its plan is a violation too)."""
    rows = {c.name: c for c in plan.constraints}
    for fam, lim in every_limit(problem, catalog):
        used, limit = fam.used(m, lim), row_limit(fam, lim, m)
        tol = USED_TOL.get(fam.unit, 1e-6)
        over = used + tol < limit if fam.at_least else used > limit + tol
        if over:
            sense = "<" if fam.at_least else ">"
            errs.append(f"{lim.name}: {used:,.3f} {fam.unit} {sense} {limit:,.3f} allowed")
        row = rows.get(lim.name)
        if row is None:
            errs.append(f"{lim.name}: missing from the plan's limits report")
        elif not math.isclose(row.used, used, rel_tol=REL, abs_tol=tol):
            errs.append(f"{lim.name}: the limits report says {row.used:,.3f} {fam.unit}, the plan holds {used:,.3f}")
