"""What each limit is worth: loosened by its natural step (one server's money or power,
one rack, 10% of a deadline or a latency target, 10% less demand, one server's GPUs of
stock) and solved again; the TCO change is the limit's marginal value, and a limit binds
when loosening it saves more than ``SAVING_USD``."""

from __future__ import annotations

import os
from typing import Any

from planner.context import Context
from planner.errors import InputError, PlannerError
from planner.executors import map_ordered
from planner.explain.resolve import solve_context, variant_context
from planner.limits.table import every_limit
from planner.schema.plan import Plan

# Plans whose TCO differs by less than this are the same for a reader (unit costs
# enter the solver in whole dollars).
SAVING_USD = 10.0


def _moved_tco(job: tuple[Context, str, Any, float | None]) -> float | None:
    ctx, path, value, time_limit_s = job
    try:
        moved, _ = solve_context(variant_context(ctx, path, value), time_limit_s)
    except (InputError, PlannerError):  # a variant the schema refuses (a limit at its bound) is not measured
        return None
    return None if moved is None else moved.tco_usd


def marginal_values(ctx: Context, plan: Plan, time_limit_s: float | None = None, workers: int | None = None) -> None:
    """Loosen each limit by its step and solve again; the re-solves run in worker processes."""
    rows, jobs = [], []
    limits = {lim.name: lim for _, lim in every_limit(ctx.problem, ctx.catalog)}
    for row in plan.constraints:
        lim = limits.get(row.name)
        if lim is None or lim.path is None or not row.step:
            continue
        value: float | int = lim.value + row.step  # the value at its path, moved by the step
        if float(lim.value).is_integer() and float(row.step).is_integer():
            value = int(value)
        rows.append(row)
        jobs.append((ctx, row.path, value, time_limit_s))
    moved = map_ordered(_moved_tco, jobs, workers or os.cpu_count() or 1)
    for row, tco in zip(rows, moved, strict=True):
        if tco is None:
            continue
        row.marginal_usd = round(tco - plan.tco_usd, 2)
        row.binding = row.marginal_usd < -SAVING_USD
