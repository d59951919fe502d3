"""Inference options: every replica kind (GPU, chassis, precision, tensor parallelism)
that meets a service's targets."""

from __future__ import annotations

from planner.bom import PoolKey
from planner.catalog import Catalog
from planner.options.types import InferenceOption, PoolLimit, Rejection, WorkloadOptions
from planner.perf.inference import InferenceEstimate, InferenceQuery, estimate_inference, max_tp_candidates
from planner.perf.links import link_for
from planner.perf.shapes import ModelShape, shape_of
from planner.schema.catalog import Gpu, ServerChassis
from planner.schema.problem import InferenceService, MeasuredThroughput


def inference_options(svc: InferenceService, catalog: Catalog, limit: PoolLimit) -> WorkloadOptions:
    shape = shape_of(svc.model, catalog) if svc.model is not None else None
    wo = WorkloadOptions(svc.name, "inference", shape)
    # the user's benchmarks, by (GPU, precision, GPUs per replica); excluded GPUs drop out
    measured = {
        (gid, m.precision, m.gpus_per_replica): m
        for m in svc.measured
        if (gid := catalog.find_gpu_id(m.gpu)) is not None
    }
    for chassis in catalog.servers.values():
        for gpu_id in chassis.gpus:
            gpu = catalog.gpus[gpu_id]
            key = PoolKey(chassis.id, gpu_id, "none")
            cap, why = limit(key)
            if cap == 0:
                wo.rejected.append(Rejection(gpu_id, chassis.id, why))
                continue
            found: list[InferenceOption] = []
            tps = max_tp_candidates(chassis.gpus_per_server)
            for precision in svc.precisions if shape is not None and svc.mix is None else []:
                assert shape is not None  # the loop runs only with a shape
                for tp in tps:
                    if (gpu_id, precision, tp) in measured:
                        continue  # measured numbers win (below)
                    est = _at_targets(
                        svc, shape, catalog, chassis, gpu, tp, precision, svc.input_tokens, svc.output_tokens
                    )
                    if est.fits:
                        found.append(InferenceOption(svc.name, key, precision, tp, est))
                    else:
                        wo.rejected.append(Rejection(gpu_id, chassis.id, f"{precision} TP{tp}: {est.reason}"))
            if svc.mix is not None:
                found += _mix_options(svc, catalog, chassis, gpu, key, tps, wo)
                wo.inference.extend(_undominated(found))
                continue
            for (gid, precision, tp), entry in measured.items():
                if gid != gpu_id:
                    continue
                reason = _measured_problem(svc, entry, tp, tps)
                if reason:
                    wo.rejected.append(Rejection(gpu_id, chassis.id, f"measured {precision} x{tp}: {reason}"))
                else:
                    found.append(InferenceOption(svc.name, key, precision, tp, _measured_estimate(svc, entry), True))
            wo.inference.extend(_undominated(found))
    if svc.generic and not wo.inference and not wo.rejected:
        wo.rejected.append(Rejection("-", "-", "no measured GPU is in the catalog after exclusions"))
    return wo


def _at_targets(
    svc: InferenceService,
    shape: ModelShape,
    catalog: Catalog,
    chassis: ServerChassis,
    gpu: Gpu,
    tp: int,
    precision: str,
    input_tokens: int,
    output_tokens: int,
) -> InferenceEstimate:
    """One replica kind on requests of one size, at the largest batch meeting the service's targets."""
    q = InferenceQuery(
        model=shape,
        gpu=gpu,
        gpus=tp,
        precision=precision,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        link=link_for(chassis, gpu, tp),
        tpot_ms=svc.tpot_ms,
        ttft_ms=svc.ttft_ms,
    )
    eff = catalog.efficiency
    return estimate_inference(q, eff.generations[gpu.generation], eff.serving)


def _mix_options(
    svc: InferenceService,
    catalog: Catalog,
    chassis: ServerChassis,
    gpu: Gpu,
    key: PoolKey,
    tps: list[int],
    wo: WorkloadOptions,
) -> list[InferenceOption]:
    """Replica kinds for a request-size mix: each bucket estimated at its own sizes (or taken
    from the user's per-bucket measurement); a kind is kept if it serves any bucket."""
    assert svc.mix is not None
    buckets = svc.mix.sized
    labels = [b.label.lower() for b in buckets]
    measured: dict[tuple[str, int], dict[int, MeasuredThroughput]] = {}
    for m in svc.measured:
        if catalog.find_gpu_id(m.gpu) == gpu.id and m.bucket is not None:
            measured.setdefault((m.precision, m.gpus_per_replica), {})[labels.index(m.bucket.lower())] = m
    kinds = sorted(set(measured) | ({(p, tp) for p in svc.precisions for tp in tps} if wo.shape else set()))
    found = []
    for precision, tp in kinds:
        if tp not in tps:
            wo.rejected.append(Rejection(gpu.id, chassis.id, f"measured x{tp}: does not pack into this server"))
            continue
        per: list[InferenceEstimate | None] = []
        reasons = []
        for k, bucket in enumerate(buckets):
            entry = measured.get((precision, tp), {}).get(k)
            if entry is not None:
                bad = _measured_problem(svc, entry, tp, tps)
                per.append(None if bad else _measured_estimate(svc, entry, bucket.output_tokens))
                reasons += [f"{bucket.label}: {bad}"] if bad else []
                continue
            if wo.shape is None or precision not in svc.precisions:
                per.append(None)
                continue
            est = _at_targets(
                svc, wo.shape, catalog, chassis, gpu, tp, precision, bucket.input_tokens, bucket.output_tokens
            )
            per.append(est if est.fits else None)
            reasons += [] if est.fits else [f"{bucket.label}: {est.reason}"]
        served = [e for e in per if e is not None]
        if not served:
            wo.rejected.append(Rejection(gpu.id, chassis.id, f"{precision} x{tp}: no bucket fits ({reasons[0]})"))
            continue
        representative = max(served, key=lambda e: e.tpot_p99_ms)  # the slowest bucket it serves
        is_measured = (precision, tp) in measured
        found.append(InferenceOption(svc.name, key, precision, tp, representative, is_measured, None, tuple(per)))
    return found


def _measured_problem(svc: InferenceService, entry: MeasuredThroughput, tp: int, tps: list[int]) -> str:
    if tp not in tps:
        return f"{tp} GPUs per replica do not pack into this server (one of {tps})"
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
