"""Why each service is served aggregated or disaggregated: the cost of the best plan of the
other kind, by solving again with the service held to it (the why-not machinery's way)."""

from __future__ import annotations

from planner.context import Context
from planner.explain.resolve import solve_context
from planner.optimize.built import Built
from planner.schema.plan import InferenceRow, Plan


def serving_mode_reasons(ctx: Context, plan: Plan, time_limit_s: float | None = None) -> None:
    """Fill ``mode_reason`` and ``other_mode_tco_usd`` of every service that could be served
    either way (in place; rows of all its years)."""
    for w in ctx.workloads:
        kinds = {o.disaggregated for o in w.inference}
        rows = [r for r in plan.inference if r.name == w.name]
        if len(kinds) < 2 or not rows:
            continue
        split = any(r.serving_mode != "aggregated" for r in rows)

        def other_mode(b: Built, name: str = w.name, split: bool = split) -> None:
            # the other kind only: a split service is held to aggregated replicas, and back
            for o, rs in b.serve[name]:
                if o.disaggregated == split:
                    for r in rs:
                        b.model.add(r == 0)

        other, _ = solve_context(ctx, time_limit_s, other_mode)
        for row in rows:
            _fill(row, plan.tco_usd, other.tco_usd if other is not None else None, split)


def _fill(row: InferenceRow, tco_usd: float, other_usd: float | None, split: bool) -> None:
    chosen = "disaggregated prefill and decode" if split else "aggregated replicas"
    other = "aggregated replicas alone" if split else "disaggregated prefill and decode"
    row.other_mode_tco_usd = None if other_usd is None else round(other_usd, 2)
    if other_usd is None:
        row.mode_reason = f"{chosen}: no plan with {other} exists"
    else:
        row.mode_reason = f"{chosen}: the best plan with {other} costs ${other_usd - tco_usd:,.0f} more"
