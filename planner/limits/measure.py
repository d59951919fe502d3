"""The quantities limits bound, read off a finished plan (the report's side).

The verifier builds the same ``Measured`` from its own recomputation; comparing the two
is how a report that contradicts its plan gets caught."""

from __future__ import annotations

from collections import defaultdict

from planner import limits
from planner import units as u
from planner.domains import claimed_loss_rps
from planner.limits.base import Measured
from planner.schema.plan import InferenceRow, Plan, ReplicaRow
from planner.schema.problem import Problem


def capacity_rps(replicas: list[ReplicaRow]) -> float:
    """Requests/s the replicas serve: aggregated ones each their own; prefill and decode
    replicas of a disaggregated KV group together, as much as the smaller phase serves."""
    total = sum(r.count * r.rps_per_replica for r in replicas if r.mode == "aggregated")
    groups: dict[str, dict[str, float]] = defaultdict(lambda: {"prefill": 0.0, "decode": 0.0})
    for r in replicas:
        if r.mode != "aggregated":
            groups[r.kv_group][r.mode] += r.count * r.rps_per_replica
    return total + sum(min(phases.values()) for phases in groups.values())


def carried_rps(row: InferenceRow, spare_share: float, mix: bool) -> float:
    """The demand a year's replicas carry at their targets with ``spare_replicas`` failure
    domains down.

    Replicas: capacity less what the worst domain holds (``per_domain`` replicas of a kind),
    spare_replicas times, over ``1 + min_spare_share`` (as the model holds it). A request-size
    mix holds each kind's spares beyond its own routed load, which the verifier checks; its
    capacity is the routed kinds' capacity."""
    capacity = capacity_rps(row.replicas)
    if not mix:
        capacity -= row.spare_replicas * claimed_loss_rps(row.replicas)
    return capacity / (1 + spare_share)


def measure(problem: Problem, plan: Plan) -> Measured:
    m = Measured(
        capex_usd=plan.capex_usd,
        facility_kw=plan.facility_power_kw,
        racks=plan.racks,
        max_rack_kw=plan.max_rack_power_kw,
        max_rack_units=plan.max_rack_units,
        job_end_day={t.name: t.end_day for t in plan.training},
        gpu_types=len({r.gpu for r in plan.servers if r.count}),
        server_price_usd=max((r.unit_price_usd for r in plan.servers), default=0.0),
        server_facility_kw=max((u.facility_kw(r.unit_power_w, problem.finance.pue) for r in plan.servers), default=0),
        extra={"max_air_rack_kw": plan.max_air_rack_power_kw},
    )
    by_year: dict[tuple[str, int], int] = defaultdict(int)
    for r in plan.servers:
        by_year[(r.gpu, r.year)] += r.count * r.gpus_per_server
    for (gpu, _), n in by_year.items():
        m.gpus_in_busiest_year[gpu] = max(n, m.gpus_in_busiest_year.get(gpu, 0))
    services = {s.name: s for s in problem.inference}
    for row in plan.inference:
        svc = services.get(row.name)
        if svc is None:
            continue
        carried = carried_rps(row, svc.min_spare_share, svc.mix is not None)
        margin = carried - row.required_rps
        if row.name not in m.carried_margin_rps or margin < m.carried_margin_rps[row.name]:
            m.carried_rps[row.name] = carried
            m.carried_margin_rps[row.name] = margin
            m.required_rps[row.name] = row.required_rps
            m.smallest_replica_rps[row.name] = min((r.rps_per_replica for r in row.replicas), default=0.0)
        ttft = [r.ttft_p99_ms for r in row.replicas] + [s.ttft_ms for b in row.routing for s in b.routes]
        tpot = [r.tpot_p99_ms for r in row.replicas] + [s.tpot_ms for b in row.routing for s in b.routes]
        if svc.mix is not None:  # each bucket's latency on the kind serving it
            ttft = [s.ttft_ms for b in row.routing for s in b.routes]
            tpot = [s.tpot_ms for b in row.routing for s in b.routes]
        m.ttft_p99_ms[row.name] = max([m.ttft_p99_ms.get(row.name, 0.0), *ttft])
        m.tpot_p99_ms[row.name] = max([m.tpot_p99_ms.get(row.name, 0.0), *tpot])
    for fam in limits.FAMILIES:
        fam.read(problem, plan, m)
    return m
