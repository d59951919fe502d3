"""Explanations users can act on, each measured by solving again.

CP-SAT has no duals, and integer problems have no trustworthy ones: every figure here is
the difference between two solved plans (marginal values, budget steps, runner-up, why not);
when no plan exists, the diagnosis (``diagnose``) says which limits conflict and how far
each must move."""

from __future__ import annotations

import time

from planner.context import Context
from planner.explain.alternatives import runner_up, why_not_rows
from planner.explain.budget import budget_steps
from planner.explain.marginal import marginal_values
from planner.explain.serving_mode import serving_mode_reasons
from planner.schema.plan import Explanations, Plan


def explain(ctx: Context, plan: Plan, time_limit_s: float | None = None, why_not: list[str] | None = None) -> None:
    """Fill ``plan.constraints[].marginal_usd`` and ``plan.explanations`` (in place)."""
    start = time.perf_counter()
    marginal_values(ctx, plan, time_limit_s)
    ex = Explanations()
    if ctx.problem.finance.budget_usd is not None:
        ex.budget_steps, ex.budget_saturates_at_usd = budget_steps(ctx, plan, time_limit_s)
    ex.runner_up = runner_up(ctx, plan, time_limit_s)
    serving_mode_reasons(ctx, plan, time_limit_s)
    if why_not:
        ex.why_not = why_not_rows(ctx, plan, why_not, time_limit_s)
    ex.seconds = round(time.perf_counter() - start, 3)
    plan.explanations = ex
