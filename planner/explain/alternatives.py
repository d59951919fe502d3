"""Other plans: a runner-up with a different GPU mix (how flat the optimum is), and why not
a GPU: the cheapest plan in which it serves a workload, or the physical reason it cannot."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from planner.context import Context
from planner.explain.marginal import SAVING_USD
from planner.explain.resolve import solve_context
from planner.optimize.built import Built
from planner.schema.plan import Plan, RunnerUp, WhyNotRow


def _gpu_flags(b: Built) -> dict[str, Any]:
    """One Boolean per GPU type: is any server of it bought?"""
    from planner.optimize.built import upper

    flags: dict[str, Any] = {}
    for key, p in b.pools.items():
        flag = flags.get(key.gpu)
        if flag is None:
            flag = flags[key.gpu] = b.model.new_bool_var(f"mix[{key.gpu}]")
        b.model.add(p.servers <= upper(p.servers) * flag)
    for gpu, flag in flags.items():
        b.model.add(sum(p.servers for k, p in b.pools.items() if k.gpu == gpu) >= flag)
    return flags


def runner_up(ctx: Context, plan: Plan, time_limit_s: float | None = None) -> RunnerUp | None:
    mix = set(plan.gpus)

    def different(b: Built) -> None:
        flags = _gpu_flags(b)
        b.model.add(
            sum(1 - f for g, f in flags.items() if g in mix) + sum(f for g, f in flags.items() if g not in mix) >= 1
        )

    other, _ = solve_context(ctx, time_limit_s, different)
    if other is None:
        return None
    return RunnerUp(tco_usd=other.tco_usd, extra_usd=round(other.tco_usd - plan.tco_usd, 2), gpus=other.gpus)


def why_not_rows(ctx: Context, plan: Plan, gpus: list[str], time_limit_s: float | None = None) -> list[WhyNotRow]:
    """For each named GPU and each workload: the best plan with that GPU serving it, or why it cannot."""
    wanted = sorted(ctx.catalog.gpus) if [g.lower() for g in gpus] == ["all"] else [ctx.catalog.gpu(g).id for g in gpus]
    rows = []
    for gpu in wanted:
        if gpu in plan.gpus and [g.lower() for g in gpus] == ["all"]:
            continue
        for w in ctx.workloads:
            rows.append(_why_not_one(ctx, plan, gpu, w.name, time_limit_s))
    return rows


def _why_not_one(ctx: Context, plan: Plan, gpu: str, workload: str, time_limit_s: float | None) -> WhyNotRow:
    w = next(x for x in ctx.workloads if x.name == workload)
    inference = [o for o in w.inference if o.gpu == gpu]
    training = [o for o in w.training if o.gpu == gpu]
    if not inference and not training:
        reasons = w.reasons_by_gpu().get(gpu) or ["not in any server chassis the problem allows"]
        return WhyNotRow(gpu=gpu, workload=workload, status="impossible", how=reasons[-1])
    forced = replace(w, inference=inference, training=training)
    sub = replace(ctx, workloads=[forced if x.name == workload else x for x in ctx.workloads])
    alt, _ = solve_context(sub, time_limit_s)
    over = ""
    if alt is None:
        # Not within the site's limits: say what it would take, with them lifted.
        alt, _ = solve_context(_without_site_limits(sub), time_limit_s)
        if alt is None:
            return WhyNotRow(
                gpu=gpu,
                workload=workload,
                status="impossible",
                how="it could run it, but not alongside the other workloads' targets",
            )
        over = (
            f"; exceeds the site's limits: needs capex {_usd(alt.capex_usd)}, "
            f"{alt.facility_power_kw:,.1f} kW, {alt.racks} racks"
        )
    extra = round(alt.tco_usd - plan.tco_usd, 2)
    status = "over the site's limits" if over else "dearer" if extra > SAVING_USD else "as cheap"
    return WhyNotRow(
        gpu=gpu,
        workload=workload,
        status=status,
        tco_usd=alt.tco_usd,
        extra_usd=extra,
        how=_usage(alt, gpu, workload) + over,
    )


def _usd(x: float) -> str:
    return f"${x:,.0f}"


def _without_site_limits(ctx: Context) -> Context:
    p = ctx.problem
    problem = p.model_copy(
        update={
            "finance": p.finance.model_copy(update={"budget_usd": None}),
            "site": p.site.model_copy(update={"power_kw": None, "racks": None}),
        }
    )
    return replace(ctx, problem=problem)


def _usage(plan: Plan, gpu: str, workload: str) -> str:
    for t in plan.training:
        if t.name == workload:
            spares = f" + {t.hot_spare_servers} hot-spare servers" if t.hot_spare_servers else ""
            return f"{t.gpus} x {t.gpu}{spares} on {t.fabric}, {t.days:.1f} days"
    for s in plan.inference:
        if s.name == workload:
            return ", ".join(f"{r.count} x {r.gpus_per_replica} {r.gpu} {r.precision}" for r in s.replicas)
    return ""
