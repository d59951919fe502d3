"""One scenario operated on hardware already chosen: exactly these servers, the rest decided as
usual (replicas, renting, schedule). Shared by ``whatif --scenarios`` and the two-stage plans."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from planner.bom import PoolKey, buyable
from planner.context import Context
from planner.errors import TimeLimitError
from planner.optimize.built import Built
from planner.optimize.model import build
from planner.optimize.solve import solve
from planner.schema.plan import Plan

ServerCounts = dict[tuple[str, str, str], int]


def servers_of(plan: Plan) -> ServerCounts:
    return {(r.server, r.gpu, r.fabric): r.count for r in plan.servers}


def fixed_plan(ctx: Context, servers: ServerCounts, time_limit_s: float | None) -> Plan | None:
    """The scenario's best operation of exactly these servers (None: they cannot serve it)."""
    from planner.explain.resolve import solve_context

    def fix(b: Built) -> None:
        for key, p in b.pools.items():
            b.model.add(p.servers == servers.get((key.server, key.gpu, key.fabric), 0))

    extra = [k for k, n in servers.items() if n]
    ctx_pools = {PoolKey(*k) for k in extra}
    if not all(buyable(ctx.catalog, key) for key in ctx_pools):
        return None  # a part this scenario's catalog does not sell cannot have been bought in it
    used = {o.pool for w in ctx.workloads for o in w.inference} | {o.pool for w in ctx.workloads for o in w.training}
    missing = ctx_pools - used
    if missing:
        # hardware no option of this scenario uses still stands (and costs): hold its pools
        return _fixed_with_pools(ctx, servers, sorted(missing), time_limit_s)
    plan, _ = solve_context(ctx, time_limit_s, fix)
    return plan


def _fixed_with_pools(ctx: Context, servers: ServerCounts, pools: list[Any], time_limit_s: float | None) -> Plan | None:
    from planner.assemble import assemble_plan

    b = build(ctx.problem, ctx.catalog, ctx.workloads, kept=ctx.kept, pools=pools)
    for key, p in b.pools.items():
        b.model.add(p.servers == servers.get((key.server, key.gpu, key.fabric), 0))
    solved = solve(b.model, time_limit_s)
    if solved.status not in ("optimal", "feasible"):
        return None
    return assemble_plan(ctx, b, solved)


def operable(ctx: Context, servers: ServerCounts) -> Context:
    """The context cut to the options these servers (or a cloud) can run: an option on a pool
    with no server holds no replica, so operating exactly these servers has the same optimum on
    a far smaller model (startup: 1,051 options to a few dozen)."""
    owned = {PoolKey(*k) for k, n in servers.items() if n} | set(ctx.kept)

    def keep(o: Any) -> bool:
        return o.rent_usd_per_gpu_hour is not None or o.pool in owned

    workloads = [
        replace(w, inference=[o for o in w.inference if keep(o)], training=[o for o in w.training if keep(o)])
        for w in ctx.workloads
    ]
    return replace(ctx, workloads=workloads)


def fixed_tco(ctx: Context, servers: ServerCounts, time_limit_s: float | None) -> tuple[Built, Any] | None:
    """Operate exactly these servers on the cut context: the built model and its solve (None:
    they cannot serve the scenario; ``TimeLimitError`` when the time ran out first)."""
    pools = sorted(PoolKey(*k) for k, n in servers.items() if n)
    if not all(buyable(ctx.catalog, key) for key in pools):
        return None  # a part this scenario's catalog does not sell cannot have been bought in it
    cut = operable(ctx, servers)
    if not all(w.feasible for w in cut.workloads):
        return None
    b = build(cut.problem, cut.catalog, cut.workloads, kept=cut.kept, pools=pools)
    for key, p in b.pools.items():
        b.model.add(p.servers == servers.get((key.server, key.gpu, key.fabric), 0))
    solved = solve(b.model, time_limit_s)
    if solved.status == "unknown":  # out of time is not "they cannot serve it"
        raise TimeLimitError()
    if solved.status not in ("optimal", "feasible"):
        return None
    return b, solved
