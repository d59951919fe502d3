"""Budget steps (epsilon-constraint): the next budget levels at which TCO drops, and the
budget above which more money saves nothing."""

from __future__ import annotations

from dataclasses import replace

from planner.context import Context
from planner.explain.marginal import SAVING_USD
from planner.explain.resolve import solve_context
from planner.optimize.built import Built
from planner.schema.plan import BudgetStep, Plan

BUDGET_STEPS = 3


def budget_steps(ctx: Context, plan: Plan, time_limit_s: float | None = None) -> tuple[list[BudgetStep], float | None]:
    """Epsilon-constraint: the budget levels just above the current one where TCO drops."""
    free_ctx = replace(
        ctx,
        problem=ctx.problem.model_copy(update={"finance": ctx.problem.finance.model_copy(update={"budget_usd": None})}),
    )
    unlimited, _ = solve_context(free_ctx, time_limit_s)
    if unlimited is None:
        return [], None
    saturates = unlimited.capex_usd
    steps: list[BudgetStep] = []
    current = plan.tco_usd
    while len(steps) < BUDGET_STEPS and current > unlimited.tco_usd + SAVING_USD:
        target = int(current - SAVING_USD)

        def cheaper(b: Built, target: int = target) -> None:
            b.model.add(b.tco <= target)
            b.model.clear_objective()
            b.model.minimize(b.capex)

        least, _ = solve_context(free_ctx, time_limit_s, cheaper)
        if least is None:
            break
        at = replace(
            free_ctx,
            problem=free_ctx.problem.model_copy(
                update={"finance": free_ctx.problem.finance.model_copy(update={"budget_usd": least.capex_usd})}
            ),
        )
        best, _ = solve_context(at, time_limit_s)
        if best is None or best.tco_usd >= current - SAVING_USD:
            break
        steps.append(
            BudgetStep(
                budget_usd=least.capex_usd,
                tco_usd=best.tco_usd,
                saves_usd=round(current - best.tco_usd, 2),
                gpus=best.gpus,
            )
        )
        current = best.tco_usd
    return steps, saturates
