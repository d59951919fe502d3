"""Disaggregated serving options: prefill replica kinds and decode replica kinds of a service.

A disaggregated deployment pairs prefill replicas with decode replicas of possibly another
GPU; the optimiser chooses how many of each (the P:D ratio) and caps the requests they serve
together by the smaller of the two phases' capacities within one *KV group*: replicas that can
hand a prompt's cache to each other.

- Rack-scale chassis (an NVLink domain of 16 GPUs or more, e.g. GB200 NVL72) move the cache
  over NVLink: prefill and decode replicas share the pool (the servers of one rack), the group
  is that pool.
- Every chassis with scale-out NICs moves it over the fabric: phase replicas live on a pool
  with the service-side fabric (the cheapest fat-tree fabric the chassis can join, by NIC price),
  and every pool of one GPU vendor on that fabric is one group; the optimiser sizes the pool's NICs and switches
  and holds the KV traffic within its NICs (``optimize.disagg``).

Only services of one request size without N+k spares are offered disaggregation (``auto``);
``always`` on a mix or with spares is rejected when the problem is read.
"""

from __future__ import annotations

import math

from planner.bom import PoolKey
from planner.catalog import Catalog
from planner.fabric import fits
from planner.options.types import InferenceOption, PoolLimit, Rejection, WorkloadOptions
from planner.perf.disagg import PHASES, KvLink, estimate_phase, kv_gb_per_request
from planner.perf.inference_types import InferenceQuery
from planner.perf.links import link_for, nvlink_domain, packing_sizes
from planner.perf.shapes import ModelShape
from planner.perf.speculation import prefix_of
from planner.schema.catalog import Gpu, ServerChassis
from planner.schema.fabric import DEFAULT_TOPOLOGY, Fabric
from planner.schema.problem import InferenceService

RACK_SCALE_DOMAIN = 16  # GPUs: an NVLink domain this large spans servers (compute trays)
# ``auto`` keeps the phases when their GPUs could cost at most this much more than the aggregated
# replicas' (a screen, by GPU price at the service's rate; the solver then decides exactly)
SCREEN_MARGIN = 0.10


def offers_disaggregation(svc: InferenceService) -> bool:
    return svc.disaggregation != "never" and svc.model is not None and svc.mix is None and not svc.spare_replicas


def serving_fabric(catalog: Catalog, chassis: ServerChassis) -> Fabric | None:
    """The fabric that carries KV caches between servers of this chassis: the cheapest NIC
    among fat-tree fabrics it can join (None without scale-out NICs)."""
    joinable = [
        f
        for f in catalog.fabrics.values()
        if f.kind != "none" and f.topology == DEFAULT_TOPOLOGY and fits(f, chassis) and f.nic_price is not None
    ]
    if not joinable:
        return None
    return min(joinable, key=lambda f: (f.nic_price.usd if f.nic_price else 0.0, -f.link_gbit_per_s, f.id))


def kv_routes(catalog: Catalog, chassis: ServerChassis, gpu: Gpu) -> list[tuple[PoolKey, KvLink, str]]:
    """Where this chassis' phase replicas may live: (pool, the link their caches cross, group)."""
    latency = catalog.efficiency.serving.link_latency_us
    out = []
    if gpu.nvlink_gb_per_s > 0 and nvlink_domain(chassis, gpu) >= RACK_SCALE_DOMAIN:
        key = PoolKey(chassis.id, gpu.id, "none")
        link = KvLink("nvlink", gpu.nvlink_gb_per_s / 2, latency.get("nvlink", 25.0))
        out.append((key, link, f"nvlink:{key.label()}"))
    fabric = serving_fabric(catalog, chassis)
    if fabric is not None:
        per_gpu = fabric.link_gbit_per_s / 8 * chassis.scaleout_nics / chassis.gpus_per_server
        link = KvLink("nic", per_gpu, fabric.latency_us)
        # one vendor's engines on both sides: a KV cache's layout is its engine's own
        out.append((PoolKey(chassis.id, gpu.id, fabric.id), link, f"fabric:{fabric.id}:{gpu.vendor.lower()}"))
    return out


def phase_options(
    svc: InferenceService,
    shape: ModelShape,
    catalog: Catalog,
    limit: PoolLimit,
    layouts: list[tuple[int, int]],
    chassis: ServerChassis,
    gpu: Gpu,
    wo: WorkloadOptions,
) -> list[InferenceOption]:
    """Prefill and decode replica kinds of the service on this chassis and GPU, per KV route."""
    eff = catalog.efficiency
    gen = eff.generations[gpu.generation]
    sizes = packing_sizes(chassis.gpus_per_server, chassis.gpus_per_tray)
    found: list[InferenceOption] = []
    for key, kv_link, group in kv_routes(catalog, chassis, gpu):
        cap, why = limit(key)
        if cap == 0:
            wo.rejected.append(Rejection(gpu.id, chassis.id, f"disaggregated on {key.fabric}: {why}"))
            continue
        for phase in PHASES:
            kinds = []
            for precision in svc.precisions:
                for n, dp in layouts:
                    if n not in sizes:
                        continue
                    q = _query(svc, shape, chassis, gpu, n, precision, dp)
                    est = estimate_phase(q, phase, kv_link, gen, eff.serving)
                    if est.fits:
                        gb = kv_gb_per_request(q, eff.serving)
                        kinds.append(
                            InferenceOption(
                                svc.name,
                                key,
                                precision,
                                n,
                                est,
                                attention_dp=dp,
                                mode=phase,
                                kv_group=group,
                                kv_gb_per_request=gb,
                            )
                        )
            found += _cheapest_per_size(kinds)
    return found


def _cheapest_per_size(kinds: list[InferenceOption]) -> list[InferenceOption]:
    """Of one phase on one pool, drop a kind another beats per GPU at no more GPUs per replica
    (several replicas of a smaller kind replace a larger one in the same pool)."""
    keep = []
    for b in kinds:
        beaten = any(
            a is not b
            and b.gpus_per_replica % a.gpus_per_replica == 0
            and (b.gpus_per_replica // a.gpus_per_replica) * a.rps_per_replica >= b.rps_per_replica
            and (a.gpus_per_replica, -a.rps_per_replica, a.precision)
            < (b.gpus_per_replica, -b.rps_per_replica, b.precision)
            and a.kv_gb_per_request <= b.kv_gb_per_request
            for a in kinds
        )
        if not beaten:
            keep.append(b)
    return sorted(keep, key=lambda o: (o.gpus_per_replica, -o.rps_per_replica, o.precision))


def _query(
    svc: InferenceService, shape: ModelShape, chassis: ServerChassis, gpu: Gpu, n: int, precision: str, dp: int
) -> InferenceQuery:
    return InferenceQuery(
        model=shape,
        gpu=gpu,
        gpus=n,
        precision=precision,
        input_tokens=svc.input_tokens,
        output_tokens=svc.output_tokens,
        link=link_for(chassis, gpu, n),
        tpot_ms=svc.tpot_ms,
        ttft_ms=svc.ttft_ms,
        attention_dp=dp,
        prefix=prefix_of(svc.prefix_cache),  # hits skip the shared prefix on prefill replicas
    )


def screen(wo: WorkloadOptions, svc: InferenceService, catalog: Catalog) -> None:
    """``auto``: drop the phases of a service where they cannot pay.

    Each side's cheapest single kind, by GPU price, in whole replicas for the service's rate:
    the aggregated kind alone, and per KV group its prefill kind plus its decode kind. When the
    best pair costs more than ``1 + SCREEN_MARGIN`` times the aggregated kind, the phases leave
    the model (what would pay for them is the network on top); the reason is kept."""
    rate = svc.requests_per_s * (1 + svc.min_spare_share)

    def cost(o: InferenceOption) -> float:
        per = o.rps_per_replica
        return math.inf if per <= 0 else catalog.gpu_price_usd(o.gpu) * o.gpus_per_replica * math.ceil(rate / per)

    agg = min((cost(o) for o in wo.inference if not o.disaggregated and o.rent_usd_per_gpu_hour is None), default=None)
    phases = [o for o in wo.inference if o.disaggregated]
    if agg is None or not phases:
        return
    pairs = []
    for group in sorted({o.kv_group for o in phases}):
        sides = [[cost(o) for o in phases if o.kv_group == group and o.mode == p] for p in PHASES]
        if all(sides):
            pairs.append(min(sides[0]) + min(sides[1]))
    best = min(pairs, default=math.inf)
    if best <= agg * (1 + SCREEN_MARGIN):
        return
    wo.inference = [o for o in wo.inference if not o.disaggregated]
    share = "no pair of phases fits" if math.isinf(best) else f"${best:,.0f} against ${agg:,.0f} aggregated"
    wo.rejected.append(
        Rejection(
            "-",
            "-",
            f"disaggregated: GPUs for {rate:g} rps cost {share}; not offered (disaggregation: always forces it)",
        )
    )
