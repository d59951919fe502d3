"""Disaggregated serving in the model: prefill and decode replicas paired within KV groups,
and the KV caches they exchange held within the NICs of their servers.

Per service and period, each KV group (``options.disagg``) carries a flow of requests no larger
than its prefill replicas' capacity nor its decode replicas' (the P:D ratio is what the solver
picks); the service's capacity is its aggregated replicas' plus these flows. A pool on a
scale-out fabric sends every prefill replica's caches out through its servers' NICs and takes
every decode replica's in: each direction at most the servers' NIC bandwidth times the link
efficiency (NICs are full duplex). Rack-scale groups move caches over NVLink and need no NIC.
"""

from __future__ import annotations

import math

from ortools.sat.python import cp_model

from planner import units as u
from planner.bom import PoolKey
from planner.catalog import Catalog
from planner.optimize.built import Built, Expr
from planner.options.types import InferenceOption

MB_PER_GB = 1000  # KV traffic in whole MB/s


def group_flows(
    m: cp_model.CpModel, name: str, year: list[tuple[InferenceOption, cp_model.IntVar, int]], need: int, y: int
) -> tuple[Expr, dict[str, cp_model.IntVar]]:
    """The requests (rate units) each KV group serves, each at most its smaller phase's capacity."""
    groups = sorted({o.kv_group for o, _, _ in year if o.disaggregated})
    flows: dict[str, cp_model.IntVar] = {}
    for g in groups:
        # a replica counts for no more than the whole demand (the cover-cut rounding: the flow
        # never exceeds it), which the LP relaxation sees
        phase_cap = {
            phase: sum(min(per, need) * r for o, r, per in year if o.kv_group == g and o.mode == phase)
            for phase in ("prefill", "decode")
        }
        if isinstance(phase_cap["prefill"], int) or isinstance(phase_cap["decode"], int):
            continue  # a group without one of its phases serves nothing
        f = m.new_int_var(0, need, f"kv_flow[{name}/{g}@{y}]")
        m.add(f <= phase_cap["prefill"]).with_name(f"service:{name}:prefill[{g}]@{y}")
        m.add(f <= phase_cap["decode"]).with_name(f"service:{name}:decode[{g}]@{y}")
        flows[g] = f
    return sum(flows.values()), flows


def kv_nic_limits(b: Built, catalog: Catalog) -> None:
    """Each fabric pool's prefill replicas send, and decode replicas receive, their caches at
    their planning rate within the NIC bandwidth of the pool's servers (every period)."""
    out: dict[tuple[PoolKey, int], list[Expr]] = {}
    into: dict[tuple[PoolKey, int], list[Expr]] = {}
    for per_year in b.serve.values():
        for o, rs in per_year:
            if not o.disaggregated or o.pool.fabric == "none" or o.rent_usd_per_gpu_hour is not None:
                continue
            mb_per_s = math.ceil(o.rps_per_replica * o.kv_gb_per_request * MB_PER_GB)
            side = out if o.mode == "prefill" else into
            for y, r in enumerate(rs):
                side.setdefault((o.pool, y), []).append(mb_per_s * r)
    link_eff = catalog.efficiency.serving.link_eff
    for direction, sides in (("out", out), ("in", into)):
        for (key, y), terms in sorted(sides.items()):
            p = b.pools[key]
            gb_per_s = p.spec.nics_per_server * catalog.fabrics[key.fabric].link_gbit_per_s / 8 * link_eff
            per_server = math.floor(gb_per_s * MB_PER_GB)
            b.model.add(sum(terms) <= per_server * p.installed[y]).with_name(f"kv_nics[{key.label()}:{direction}]@{y}")


def capacity_rps(option: InferenceOption) -> float:
    """A replica's planning capacity as the model counts it (requests/s)."""
    return u.rps_down(option.rps_per_replica) / u.RATE_PER_RPS
