"""Inference options: every replica kind (GPU, chassis, precision, parallelism: tensor
parallelism, and for MoE models wide expert parallelism with attention data parallelism)
that meets a service's targets."""

from __future__ import annotations

import math
from collections.abc import Container
from itertools import product

from planner.bom import PoolKey
from planner.catalog import Catalog
from planner.options.disagg import offers_disaggregation, phase_options, screen
from planner.options.types import InferenceOption, PoolLimit, Rejection, WorkloadOptions
from planner.perf.inference import engine_for, estimate_inference, max_tp_candidates, plans_within
from planner.perf.inference_types import InferenceEstimate, InferenceQuery
from planner.perf.links import link_for, nvlink_domain, packing_sizes
from planner.perf.load_mix import RequestClass, colocated_factor
from planner.perf.shapes import ModelShape, shape_of
from planner.perf.speculation import Speculation, prefix_of, speculation_of
from planner.schema.catalog import Gpu, ServerChassis
from planner.schema.problem import InferenceService
from planner.schema.traffic import MeasuredThroughput

Layout = tuple[int, int]  # (GPUs per replica, attention data-parallel groups)

# Plans are offered wide expert parallelism with attention DP for MoE models: replica rows
# carry their attention_dp, and the verifier recomputes each replica with it.
WIDE_EP_IN_PLANS = True


def inference_options(
    svc: InferenceService, catalog: Catalog, limit: PoolLimit, wide_ep: bool = WIDE_EP_IN_PLANS
) -> WorkloadOptions:
    """Every replica kind of the service on every pool that could hold it; ``wide_ep`` adds,
    for MoE models, wide expert parallelism with attention DP (see ``replica_layouts``)."""
    parts = [pool_options(svc, catalog, chassis, gpu, limit, wide_ep) for chassis, gpu in service_pools(catalog)]
    return joined_options(svc, catalog, parts)


def service_pools(catalog: Catalog) -> list[tuple[str, str]]:
    """(chassis, GPU) pairs a service's options are enumerated on, in order."""
    return [(key, gpu_id) for key, chassis in catalog.servers.items() for gpu_id in chassis.gpus]


def joined_options(svc: InferenceService, catalog: Catalog, parts: list[WorkloadOptions]) -> WorkloadOptions:
    """A service's options from its pools' (``pool_options``, in ``service_pools`` order)."""
    wo = WorkloadOptions(svc.name, "inference", shape_of(svc.model, catalog) if svc.model is not None else None)
    for part in parts:
        wo.inference += part.inference
        wo.rejected += part.rejected
    if svc.disaggregation == "auto":
        screen(wo, svc, catalog)
    if svc.generic and not wo.inference and not wo.rejected:
        wo.rejected.append(Rejection("-", "-", "no measured GPU is in the catalog after exclusions"))
    return wo


def pool_options(
    svc: InferenceService, catalog: Catalog, chassis_id: str, gpu_id: str, limit: PoolLimit, wide_ep: bool
) -> WorkloadOptions:
    """The service's replica kinds (and the reasons against the others) on one chassis and GPU."""
    shape = shape_of(svc.model, catalog) if svc.model is not None else None
    wo = WorkloadOptions(svc.name, "inference", shape)
    chassis, gpu = catalog.servers[chassis_id], catalog.gpus[gpu_id]
    key = PoolKey(chassis.id, gpu_id, "none")
    cap, why = limit(key)
    if cap == 0:
        wo.rejected.append(Rejection(gpu_id, chassis.id, why))
        return wo
    sizes = packing_sizes(chassis.gpus_per_server, chassis.gpus_per_tray)
    if svc.mix is not None:
        wo.inference.extend(_undominated(_mix_options(svc, catalog, chassis, gpu, key, sizes, wo, wide_ep)))
        return wo
    # the user's benchmarks, by (GPU, precision, GPUs per replica); excluded GPUs drop out
    measured = {
        (gid, m.precision, m.gpus_per_replica): m
        for m in svc.measured
        if (gid := catalog.find_gpu_id(m.gpu)) is not None
    }
    found = _modelled_options(svc, catalog, chassis, gpu, key, measured, wo, wide_ep)
    if svc.disaggregation == "always":
        found = []
    for (gid, precision, n), entry in measured.items():
        if gid != gpu_id or svc.disaggregation == "always":
            continue
        reason = _measured_problem(svc, entry, n, sizes)
        if reason:
            wo.rejected.append(Rejection(gpu_id, chassis.id, f"measured {precision} x{n}: {reason}"))
        else:
            found.append(InferenceOption(svc.name, key, precision, n, _measured_estimate(svc, entry), True))
    wo.inference.extend(_undominated(found))
    if wo.shape is not None and offers_disaggregation(svc):
        layouts = replica_layouts(chassis, gpu, wo.shape, wide_ep)
        wo.inference += phase_options(svc, wo.shape, catalog, limit, layouts, chassis, gpu, wo)
    return wo


def replica_layouts(chassis: ServerChassis, gpu: Gpu, shape: ModelShape | None, wide_ep: bool = True) -> list[Layout]:
    """The replica kinds to estimate on one chassis, as (GPUs, attention DP groups).

    Tensor parallelism over the powers of two that divide the server (1, 2, 4, 8). For an MoE
    model also wide expert parallelism: each replica size of ``packing_sizes`` inside the
    NVLink domain (2, 4, 8 on an 8-GPU HGX; 2, 4, 8, 24, 72 on NVL72, whole 4-GPU trays from
    4 up) with at least one routed expert per GPU, its routed experts spread over all its GPUs
    and its attention run by ``gpus / tp`` data-parallel groups of ``tp`` GPUs, for each TP
    degree below the size. Only sizes from ``packing_sizes``: replicas of a pool then pack into
    whole servers without one leaving its NVLink domain (an inference pool has no scale-out
    fabric), which 16-, 32- or 64-GPU replicas on a 72-GPU rack would not (nine 64-GPU replicas
    fit eight racks' GPUs, but not their NVLink domains). Sizes beyond the model's expert count
    would split experts, which this model of expert parallelism does not cover.
    """
    tps = max_tp_candidates(chassis.gpus_per_server)
    plain = [(t, 1) for t in tps]
    if not wide_ep or shape is None or shape.experts <= 1 or gpu.nvlink_gb_per_s <= 0:
        return plain
    widest = min(nvlink_domain(chassis, gpu), shape.experts)
    sizes = packing_sizes(chassis.gpus_per_server, chassis.gpus_per_tray)
    wide = [(n, n // t) for n in sizes if 1 < n <= widest for t in tps if t < n and n % t == 0]
    return sorted(plain + wide)


def _modelled_options(
    svc: InferenceService,
    catalog: Catalog,
    chassis: ServerChassis,
    gpu: Gpu,
    key: PoolKey,
    measured: Container[tuple[str, str, int]],
    wo: WorkloadOptions,
    wide_ep: bool,
) -> list[InferenceOption]:
    """The performance model's replica kinds that meet the targets, per precision smallest
    first and, of one size, the fastest layout first (a rented twin takes the first).

    Kinds are estimated smallest first over every precision, so that a larger kind whose
    most possible throughput (``plans_within``) replicas of a smaller one already match is
    never sized by a rate search: ``_undominated`` would drop it whatever its rate (startup:
    44 of its 146 kinds). The kinds and reasons returned are the same, in the same order."""
    if wo.shape is None:
        return []
    layouts = replica_layouts(chassis, gpu, wo.shape, wide_ep)
    kinds = [
        (precision, n, dp, spec)
        for precision in svc.precisions
        for (n, dp), spec in product(layouts, speculations(svc, wo.shape, catalog))
        if (gpu.id, precision, n) not in measured  # measured numbers win (see inference_options)
    ]
    gen, serving = catalog.efficiency.generations[gpu.generation], catalog.efficiency.serving
    made: dict[int, InferenceOption | Rejection] = {}
    for i in sorted(range(len(kinds)), key=lambda i: kinds[i][1]):
        precision, n, dp, spec = kinds[i]
        q = _query(svc, wo.shape, chassis, gpu, n, precision, svc.input_tokens, svc.output_tokens, dp, spec)
        beaten_at = max((_beats_at(o, n) for o in made.values() if isinstance(o, InferenceOption)), default=0.0)
        if beaten_at > 0 and plans_within(q, gen, serving, beaten_at):
            continue  # it fits, and smaller replicas on the same GPUs serve at least as much
        est = estimate_inference(q, gen, serving)
        if est.fits:
            made[i] = InferenceOption(svc.name, key, precision, n, est, attention_dp=dp, speculation=spec)
        elif dp == 1 and spec is None:  # a plain-TP reason says why a GPU cannot serve
            made[i] = Rejection(gpu.id, chassis.id, f"{precision} TP{n}: {est.reason}")
    wo.rejected += [r for i, r in sorted(made.items()) if isinstance(r, Rejection)]
    found: list[InferenceOption] = []
    for precision in svc.precisions:
        mine = [o for i, o in sorted(made.items()) if isinstance(o, InferenceOption) and kinds[i][0] == precision]
        found += sorted(mine, key=lambda o: (o.gpus_per_replica, -o.rps_per_replica))
    return found


def _beats_at(a: InferenceOption, gpus: int) -> float:
    """The rate below which a kind of ``gpus`` GPUs is dropped by ``_undominated`` for ``a``: as
    many GPUs in replicas of ``a`` serve at least as much (strictly more, for ``a``'s size)."""
    if gpus % a.gpus_per_replica:
        return 0.0
    if a.gpus_per_replica == gpus:  # of one size, the faster wins: ties go by precision
        return math.nextafter(a.rps_per_replica, 0.0)
    return (gpus // a.gpus_per_replica) * a.rps_per_replica


def _query(
    svc: InferenceService,
    shape: ModelShape,
    chassis: ServerChassis,
    gpu: Gpu,
    tp: int,
    precision: str,
    input_tokens: int,
    output_tokens: int,
    attention_dp: int = 1,
    speculation: Speculation | None = None,
) -> InferenceQuery:
    """One replica kind of ``tp`` GPUs (in ``attention_dp`` attention groups, speculating or
    not) on requests of one size, under the service's targets."""
    return InferenceQuery(
        model=shape,
        gpu=gpu,
        gpus=tp,
        precision=precision,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        link=link_for(chassis, gpu, tp),
        tpot_ms=svc.tpot_ms,
        ttft_ms=svc.ttft_ms,
        attention_dp=attention_dp,
        prefix=prefix_of(svc.prefix_cache),
        speculation=speculation,
    )


def speculations(svc: InferenceService, shape: ModelShape | None, catalog: Catalog) -> list[Speculation | None]:
    """Replicas without speculation, and with it when the service allows it: the optimiser
    picks, so allowing speculation never makes a plan worse."""
    if svc.speculative is None or svc.model is None or shape is None:
        return [None]
    return [None, speculation_of(svc.speculative, svc.model, shape, catalog)]


def _mix_options(
    svc: InferenceService,
    catalog: Catalog,
    chassis: ServerChassis,
    gpu: Gpu,
    key: PoolKey,
    sizes: list[int],
    wo: WorkloadOptions,
    wide_ep: bool,
) -> list[InferenceOption]:
    """Replica kinds for a request-size mix: each bucket estimated at its own sizes (or taken
    from the user's per-bucket measurement); a kind is kept if it serves any bucket."""
    assert svc.mix is not None
    labels = [b.label.lower() for b in svc.mix.sized]
    measured: dict[tuple[str, int], dict[int, MeasuredThroughput]] = {}
    for m in svc.measured:
        if catalog.find_gpu_id(m.gpu) == gpu.id and m.bucket is not None:
            measured.setdefault((m.precision, m.gpus_per_replica), {})[labels.index(m.bucket.lower())] = m
    modelled = {(p, n, dp) for p in svc.precisions for n, dp in replica_layouts(chassis, gpu, wo.shape, wide_ep)}
    kinds = sorted({(p, n, 1) for p, n in measured} | (modelled if wo.shape else set()))
    found = []
    for (precision, n, dp), spec in product(kinds, speculations(svc, wo.shape, catalog)):
        if n not in sizes:
            if spec is None:
                wo.rejected.append(Rejection(gpu.id, chassis.id, f"measured x{n}: does not pack into this server"))
            continue
        mine = measured.get((precision, n), {}) if spec is None else {}
        per, reasons = _mix_buckets(svc, catalog, chassis, gpu, (precision, n, dp), mine, sizes, wo.shape, spec)
        served = [e for e in per if e is not None]
        if not served:
            if dp == 1 and spec is None:  # as for a single size: a plain-TP reason says why the GPU cannot serve
                wo.rejected.append(Rejection(gpu.id, chassis.id, f"{precision} x{n}: no bucket fits ({reasons[0]})"))
            continue
        representative = max(served, key=lambda e: e.tpot_p99_ms)  # the slowest bucket it serves
        is_measured = dp == 1 and (precision, n) in measured
        factor = (
            1.0
            if mine or wo.shape is None
            else _colocated_factor(svc, wo.shape, catalog, chassis, gpu, per, (precision, n, dp), spec)
        )
        found.append(
            InferenceOption(
                svc.name, key, precision, n, representative, is_measured, None, tuple(per), dp, factor, speculation=spec
            )
        )
    return found


def _mix_buckets(
    svc: InferenceService,
    catalog: Catalog,
    chassis: ServerChassis,
    gpu: Gpu,
    kind: tuple[str, int, int],
    measured: dict[int, MeasuredThroughput],
    sizes: list[int],
    shape: ModelShape | None,
    speculation: Speculation | None = None,
) -> tuple[list[InferenceEstimate | None], list[str]]:
    """One replica kind's figures per bucket of the mix (None where it cannot serve it), and why not."""
    assert svc.mix is not None
    precision, n, dp = kind
    per: list[InferenceEstimate | None] = []
    reasons = []
    for k, bucket in enumerate(svc.mix.sized):
        entry = measured.get(k) if dp == 1 else None
        if entry is not None:
            bad = _measured_problem(svc, entry, n, sizes)
            per.append(None if bad else _measured_estimate(svc, entry, bucket.output_tokens))
            reasons += [f"{bucket.label}: {bad}"] if bad else []
            continue
        if shape is None or precision not in svc.precisions:
            per.append(None)
            continue
        q = _query(svc, shape, chassis, gpu, n, precision, bucket.input_tokens, bucket.output_tokens, dp, speculation)
        est = estimate_inference(q, catalog.efficiency.generations[gpu.generation], catalog.efficiency.serving)
        per.append(est if est.fits else None)
        reasons += [] if est.fits else [f"{bucket.label}: {est.reason}"]
    return per, reasons


def _colocated_factor(
    svc: InferenceService,
    shape: ModelShape,
    catalog: Catalog,
    chassis: ServerChassis,
    gpu: Gpu,
    per: list[InferenceEstimate | None],
    kind: tuple[str, int, int],
    speculation: Speculation | None = None,
) -> float:
    """How much of each bucket's own capacity a replica keeps when it serves all the buckets it
    can, in the mix's proportions: the largest rate of that mix meeting the targets for every
    bucket (``load_mix.mix_max_rate``, one engine at the mix's mean sizes, as the simulator
    runs it) over the rate the buckets' own capacities would time-share to. 1 when it serves
    one bucket; 0 when no rate of the mix meets the targets."""
    assert svc.mix is not None
    served = [(b, e) for b, e in zip(svc.mix.sized, per, strict=True) if e is not None]
    if len(served) < 2:
        return 1.0
    total = sum(b.share for b, _ in served)
    mean_in = sum(b.share * b.input_tokens for b, _ in served) / total
    mean_out = sum(b.share * b.output_tokens for b, _ in served) / total
    precision, n, dp = kind
    q = InferenceQuery(
        model=shape,
        gpu=gpu,
        gpus=n,
        precision=precision,
        input_tokens=max(1, round(mean_in)),
        output_tokens=max(1, round(mean_out)),
        link=link_for(chassis, gpu, n),
        attention_dp=dp,
        prefix=prefix_of(svc.prefix_cache),
        speculation=speculation,
    )
    eff = catalog.efficiency
    engine = engine_for(q, eff.generations[gpu.generation], eff.serving)
    if engine is None:
        return 0.0
    classes = [RequestClass(b.input_tokens, b.output_tokens, b.share) for b, _ in served]
    capacities = [e.planning_requests_per_s for _, e in served]
    ttft_s = None if svc.ttft_ms is None else svc.ttft_ms / 1000
    tpot_s = None if svc.tpot_ms is None else svc.tpot_ms / 1000
    return colocated_factor(engine, classes, capacities, ttft_s, tpot_s)


def _measured_problem(svc: InferenceService, entry: MeasuredThroughput, n: int, sizes: list[int]) -> str:
    if n not in sizes:
        return f"{n} GPUs per replica do not pack into this server (one of {sizes})"
    if svc.generic:
        return ""
    if entry.precision not in svc.precisions:
        return f"precision {entry.precision} is not in this service's precisions"
    if entry.ttft_ms is not None and entry.ttft_ms > svc.ttft_ms:
        return f"your measured TTFT {entry.ttft_ms:g} ms misses the {svc.ttft_ms:g} ms target"
    if entry.tpot_ms is not None and entry.tpot_ms > svc.tpot_ms:
        return f"your measured TPOT {entry.tpot_ms:g} ms misses the {svc.tpot_ms:g} ms target"
    return ""


def _measured_estimate(
    svc: InferenceService, entry: MeasuredThroughput, output_tokens: int | None = None
) -> InferenceEstimate:
    """A user's benchmark, dressed as an estimate: taken as is, no headroom taken off."""
    rps = entry.requests_per_s
    tokens = 0.0 if svc.generic else rps * (output_tokens or svc.output_tokens)
    return InferenceEstimate(
        fits=True,
        requests_per_s=rps,
        planning_requests_per_s=rps,
        output_tokens_per_s=tokens,
        output_tokens_per_s_per_gpu=tokens / entry.gpus_per_replica,
        ttft_ms=entry.ttft_ms or 0.0,
        tpot_ms=entry.tpot_ms or 0.0,
        ttft_p99_ms=entry.ttft_ms or 0.0,
        tpot_p99_ms=entry.tpot_ms or 0.0,
        factors={"source": "measured (problem file)"},
    )


def _undominated(found: list[InferenceOption]) -> list[InferenceOption]:
    """Drop an option when replicas of another option on the same pool, using the same GPUs,
    serve at least as much (``b.tp / a.tp`` replicas of ``a`` replace one of ``b``)."""
    keep = []
    for b in found:
        beaten = any(
            a is not b
            and b.gpus_per_replica % a.gpus_per_replica == 0
            and all(
                (b.gpus_per_replica // a.gpus_per_replica) * ca >= cb
                for ca, cb in zip(a.capacities, b.capacities, strict=True)
            )
            and (a.gpus_per_replica, -a.rps_per_replica, a.precision)
            < (b.gpus_per_replica, -b.rps_per_replica, b.precision)
            for a in found
        )
        if not beaten:
            keep.append(b)
    return keep
