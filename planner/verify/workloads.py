"""Workloads: each job and each replica kind recomputed with the performance model (or the
user's own benchmark); the demand carried and the p99 latencies go to the limit checks."""

from __future__ import annotations

import math

from planner.catalog import Catalog
from planner.domains import Lost, domain_losses, worst_kind_loss
from planner.limits.base import Measured
from planner.limits.measure import carried_rps
from planner.options.training import estimate_job
from planner.perf.inference import engine_for, estimate_inference
from planner.perf.inference_types import InferenceEstimate, InferenceQuery
from planner.perf.links import link_for
from planner.perf.load_mix import RequestClass, colocated_factor
from planner.perf.shapes import shape_of
from planner.perf.speculation import prefix_of, speculation_of
from planner.schema.plan import InferenceRow, Plan, ReplicaRow, TrainingRow
from planner.schema.problem import InferenceService, MixBucket, Problem, TrainingJob
from planner.verify.common import REL
from planner.verify.disagg import check_phase
from planner.verify.domains import check_claims, check_domains_down


def check_training(problem: Problem, catalog: Catalog, plan: Plan, errs: list[str], m: Measured) -> None:
    """Each job's days recomputed on the hardware the plan gives it; its schedule in order."""
    rows = {t.name: t for t in plan.training}
    for job in problem.training:
        t = rows.get(job.name)
        if t is None:
            errs.append(f"job {job.name} is not in the plan")
            continue
        why = _job_days(job, t, catalog)
        if why:
            errs.append(f"job {job.name}: {why}")
        if t.start_day + 1e-9 < job.release_day:
            errs.append(f"job {job.name} starts on day {t.start_day} before its release day {job.release_day}")
        if t.end_day < t.start_day + t.days - 0.01:
            errs.append(f"job {job.name}: end {t.end_day} is before start + duration")
        m.job_end_day[job.name] = max(t.end_day, t.start_day + t.days)  # the deadline family checks it
        for dep in job.after:
            d = next((r for n, r in rows.items() if n.lower() == dep.lower()), None)
            if d and t.start_day + 1e-9 < d.end_day:
                errs.append(f"job {job.name} starts before {d.name} ends")


def _job_days(job: TrainingJob, t: TrainingRow, catalog: Catalog) -> str:
    """Why the row's days, goodput or hot spares are not what the job takes on its GPUs, chassis
    and fabric ("" if they are)."""
    if t.server not in catalog.servers or t.gpu not in catalog.gpus or t.fabric not in catalog.fabrics:
        return f"{t.server}+{t.gpu} on {t.fabric} is not in the catalog this problem may buy from"
    chassis, gpu, fabric = catalog.servers[t.server], catalog.gpus[t.gpu], catalog.fabrics[t.fabric]
    est = estimate_job(job, shape_of(job.model, catalog), catalog, chassis, gpu, fabric, t.gpus, rented=t.rented)
    if not est.fits:
        return f"does not fit {t.gpus} x {t.gpu}: {est.reason}"
    if t.hot_spare_servers != est.hot_spare_servers or t.hot_spare_gpus != est.hot_spare_gpus:
        return (
            f"holds {t.hot_spare_servers} hot-spare servers ({t.hot_spare_gpus} GPUs); the interruption model "
            f"gives {est.hot_spare_servers} ({est.hot_spare_gpus} GPUs) on {t.gpus} x {t.gpu}"
        )
    if t.goodput is None or abs(t.goodput - est.goodput) > 1e-4:
        return f"goodput {t.goodput} in the plan, {est.goodput:.5f} recomputed on {t.gpus} x {t.gpu}"
    if abs(t.days - est.days) > max(0.01, 1e-4 * est.days):
        return f"takes {t.days:g} days in the plan, {est.days:.3f} recomputed on {t.gpus} x {t.gpu}"
    return ""


def check_inference(problem: Problem, catalog: Catalog, plan: Plan, errs: list[str], m: Measured) -> None:
    """Each replica kind recomputed with the performance model (or the user's benchmark);
    the demand each year's replicas carry (with their worst failure domains down, on the
    verifier's own placement) and their p99 latencies go to the limit checks."""
    losses = domain_losses(problem, catalog, plan)
    for svc in problem.inference:
        rows = [s for s in plan.inference if s.name == svc.name]
        if not rows:
            errs.append(f"service {svc.name} is not in the plan")
            continue
        latencies: list[tuple[float, float]] = []
        for row in rows:
            need = (
                svc.peak_requests_per_s(problem.horizon_years)
                if row.year is None
                else svc.requests_per_s_in_year(row.year)
            )
            if not math.isclose(row.required_rps, need, rel_tol=REL):
                errs.append(f"service {svc.name}{_year(row)}: plans for {row.required_rps} rps, demand is {need:g}")
            capacity = None
            units = losses.get((row.name, row.year), [])
            check_claims(row, units, errs)
            if svc.mix is not None:
                found, capacity = _check_mix(svc, row, need * (1 + svc.min_spare_share), catalog, units, errs)
                latencies += found
            for rep in [] if svc.mix is not None else row.replicas:
                why, p99 = (
                    _check_measured(svc, rep, catalog)
                    if rep.source == "measured"
                    else _check_phase(svc, rep, catalog)
                    if rep.mode != "aggregated"
                    else _check_modelled(svc, rep, catalog)
                )
                if why:
                    errs.append(f"service {svc.name}: {rep.gpu} x{rep.gpus_per_replica} {rep.precision}: {why}")
                latencies.append(p99)
            if capacity is None:
                check_domains_down(svc, row, need, units, errs)
            # the limits row counts each domain as the row says it holds (no fewer than the
            # placement puts on one: check_claims), as the model does
            carried = (
                carried_rps(row, svc.min_spare_share, mix=False)
                if capacity is None
                else capacity / (1 + svc.min_spare_share)  # a mix: from the recomputed kinds
            )
            if svc.name not in m.carried_margin_rps or carried - need < m.carried_margin_rps[svc.name]:
                m.carried_rps[svc.name], m.carried_margin_rps[svc.name] = carried, carried - need
                m.required_rps[svc.name] = need
        m.ttft_p99_ms[svc.name] = max((ttft for ttft, _ in latencies), default=0.0)
        m.tpot_p99_ms[svc.name] = max((tpot for _, tpot in latencies), default=0.0)


def _year(row: InferenceRow) -> str:
    return "" if row.year is None else f" (year {row.year})"


def _check_mix(
    svc: InferenceService, row: InferenceRow, need: float, catalog: Catalog, units: list[Lost], errs: list[str]
) -> tuple[list[P99], float]:
    """Every bucket is fully routed, in whole slices, to kinds that meet its targets at its own
    sizes; each kind's replicas have the time for the traffic routed to them, also with the
    service's worst failure domains down (``units``: what each domain holds),
    and carry the requests/s the plan claims for them. Returns the recomputed p99 (TTFT, TPOT)
    of every route and the replicas' capacity in requests/s of the routed mix."""
    assert svc.mix is not None
    latencies: list[P99] = []
    busy = [0.0] * len(row.replicas)  # replica-time each kind needs
    kinds_buckets: dict[int, set[str]] = {}  # the buckets each kind serves
    routed = [0.0] * len(row.replicas)  # requests/s routed to each kind
    buckets = svc.mix.sized
    if [b.bucket for b in row.routing] != [b.label for b in buckets]:
        errs.append(f"service {svc.name}{_year(row)}: routing does not list the mix's buckets")
        return latencies, 0.0
    for bucket, route in zip(buckets, row.routing, strict=True):
        total = sum(r.share for r in route.routes)
        if abs(total - 1) > 1e-9:
            errs.append(f"service {svc.name}{_year(row)}: bucket {bucket.label} routed {total:.4f} of its requests")
        for r in route.routes:
            slices = r.share * svc.mix.slices
            if abs(slices - round(slices)) > 1e-9:
                errs.append(f"service {svc.name}: bucket {bucket.label}: share {r.share} is not whole slices")
            if not 0 <= r.replica < len(row.replicas):
                errs.append(f"service {svc.name}: bucket {bucket.label} routed to replica kind {r.replica}, not listed")
                continue
            rep = row.replicas[r.replica]
            rps, why, p99 = _bucket_capacity(svc, rep, bucket, catalog)
            if why:
                errs.append(f"service {svc.name}: bucket {bucket.label} on {rep.gpu} x{rep.gpus_per_replica}: {why}")
                continue
            latencies.append(p99)
            busy[r.replica] += need * bucket.share * r.share / rps
            routed[r.replica] += need * bucket.share * r.share
            kinds_buckets.setdefault(r.replica, set()).add(bucket.label)
    for index, labels in kinds_buckets.items():
        if len(labels) > 1:
            factor = _colocated(svc, row.replicas[index], catalog)
            if factor <= 0:
                errs.append(f"service {svc.name}: {row.replicas[index].gpu} cannot serve its buckets together")
                continue
            busy[index] /= factor
    capacity = 0.0
    for rep, load, rate in zip(row.replicas, busy, routed, strict=True):
        if load > rep.count + 1e-4:
            errs.append(f"service {svc.name}{_year(row)}: {rep.gpu} needs {load:.3f} replicas, plan has {rep.count}")
        per_replica = rate / load if load else 0.0  # a replica's requests/s on the mix routed to its kind
        if abs(per_replica - rep.rps_per_replica) > 1e-3:
            errs.append(
                f"service {svc.name}{_year(row)}: {rep.gpu} claims {rep.rps_per_replica} rps per replica "
                f"for the requests sent to it, recomputed {per_replica:.3f}"
            )
        else:  # the same figure to the plan's thousandth: count it as the report does
            per_replica = rep.rps_per_replica
        capacity += rep.count * per_replica
    for i, (rep, load) in enumerate(zip(row.replicas, busy, strict=True)):
        down = worst_kind_loss(units, i, svc.spare_replicas)
        if svc.spare_replicas and rep.count - down + 1e-4 < load:
            errs.append(
                f"service {svc.name}{_year(row)}: {rep.gpu} x{rep.gpus_per_replica} needs {load:.3f} replicas; "
                f"{rep.count - down} are left with {svc.spare_replicas} {svc.spare_domain}(s) down"
            )
    return latencies, capacity


P99 = tuple[float, float]  # (TTFT, TPOT) at the p99, ms


def _colocated(svc: InferenceService, rep: ReplicaRow, catalog: Catalog) -> float:
    """A kind serving several buckets keeps this share of each one's own capacity (prompts of
    other sizes lengthen its iterations): recomputed from the buckets it can serve, in their
    shares, on one engine at their mean sizes. Measured kinds: 1 (the measurement stands)."""
    assert svc.mix is not None
    served = []
    kind = (rep.gpu, rep.precision, rep.gpus_per_replica)
    if any(m.bucket and (catalog.find_gpu_id(m.gpu), m.precision, m.gpus_per_replica) == kind for m in svc.measured):
        return 1.0
    for bucket in svc.mix.sized:
        rps, why, _ = _bucket_capacity(svc, rep, bucket, catalog)
        if not why:
            served.append((bucket, rps))
    if len(served) < 2 or svc.model is None:
        return 1.0
    total = sum(b.share for b, _ in served)
    mean_in = max(1, round(sum(b.share * b.input_tokens for b, _ in served) / total))
    mean_out = max(1, round(sum(b.share * b.output_tokens for b, _ in served) / total))
    q = _query(svc, rep, catalog, mean_in, mean_out)
    eff = catalog.efficiency
    engine = engine_for(q, eff.generations[q.gpu.generation], eff.serving)
    if engine is None:
        return 0.0
    classes = [RequestClass(b.input_tokens, b.output_tokens, b.share) for b, _ in served]
    ttft_s = None if svc.ttft_ms is None else svc.ttft_ms / 1000
    tpot_s = None if svc.tpot_ms is None else svc.tpot_ms / 1000
    return colocated_factor(engine, classes, [rps for _, rps in served], ttft_s, tpot_s)


def _bucket_capacity(
    svc: InferenceService, rep: ReplicaRow, bucket: MixBucket, catalog: Catalog
) -> tuple[float, str, P99]:
    """A replica kind's planning requests/s on one bucket and its p99 latencies, recomputed;
    or why it cannot serve it."""
    for m in svc.measured:
        if (catalog.find_gpu_id(m.gpu), m.precision, m.gpus_per_replica) == (
            rep.gpu,
            rep.precision,
            rep.gpus_per_replica,
        ) and (m.bucket or "").lower() == bucket.label.lower():
            return m.requests_per_s, "", (m.ttft_ms or 0.0, m.tpot_ms or 0.0)
    if svc.model is None:
        return 0.0, "no measurement for this bucket", (0.0, 0.0)
    est, why = _recompute(
        svc, rep, catalog, bucket.input_tokens, bucket.output_tokens, tpot_ms=svc.tpot_ms, ttft_ms=svc.ttft_ms
    )
    if est is None:
        return 0.0, why, (0.0, 0.0)
    return est.planning_requests_per_s, "", (est.ttft_p99_ms, est.tpot_p99_ms)


def _recompute(
    svc: InferenceService,
    rep: ReplicaRow,
    catalog: Catalog,
    input_tokens: int,
    output_tokens: int,
    *,
    concurrency: int | None = None,
    tpot_ms: float | None = None,
    ttft_ms: float | None = None,
) -> tuple[InferenceEstimate | None, str]:
    """The replica recomputed with the performance model on requests of one size (at a fixed
    ``concurrency``, or at the largest batch meeting the targets), or why it does not fit."""
    assert svc.model is not None
    if rep.precision not in svc.precisions:
        return None, "precision not allowed"
    if rep.gpu not in catalog.gpus or rep.server not in catalog.servers:
        return None, "not in the catalog this problem may buy from (excluded?)"
    if rep.speculation_tokens_per_step is not None and svc.speculative is None:
        return None, "speculates, but the service allows no speculative decoding"
    q = _query(
        svc, rep, catalog, input_tokens, output_tokens, concurrency=concurrency, tpot_ms=tpot_ms, ttft_ms=ttft_ms
    )
    eff = catalog.efficiency
    est = estimate_inference(q, eff.generations[q.gpu.generation], eff.serving)
    if not est.fits:
        return None, f"does not fit: {est.reason}"
    return est, ""  # its p99 latencies are held to the targets by the limit checks


def _query(
    svc: InferenceService,
    rep: ReplicaRow,
    catalog: Catalog,
    input_tokens: int,
    output_tokens: int,
    **targets: int | float | None,
) -> InferenceQuery:
    """The plan's replica kind as a performance-model query, on requests of one size (with the
    service's prefix cache, and its speculation when the row speculates)."""
    assert svc.model is not None
    gpu, chassis = catalog.gpus[rep.gpu], catalog.servers[rep.server]
    shape = shape_of(svc.model, catalog)
    speculates = rep.speculation_tokens_per_step is not None and svc.speculative is not None
    return InferenceQuery(
        model=shape,
        gpu=gpu,
        gpus=rep.gpus_per_replica,
        precision=rep.precision,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        link=link_for(chassis, gpu, rep.gpus_per_replica),
        attention_dp=rep.attention_dp,
        prefix=prefix_of(svc.prefix_cache),
        speculation=speculation_of(svc.speculative, svc.model, shape, catalog)
        if speculates and svc.speculative
        else None,
        **targets,  # type: ignore[arg-type]
    )


def _check_phase(svc: InferenceService, rep: ReplicaRow, catalog: Catalog) -> tuple[str, P99]:
    """A disaggregated phase's row, recomputed on its own query (``verify.disagg``)."""
    if svc.model is None or rep.precision not in svc.precisions:
        return "a disaggregated replica needs the service's model and one of its precisions", (0.0, 0.0)
    if rep.gpu not in catalog.gpus or rep.server not in catalog.servers:
        return "not in the catalog this problem may buy from (excluded?)", (0.0, 0.0)
    q = _query(svc, rep, catalog, svc.input_tokens, svc.output_tokens, tpot_ms=svc.tpot_ms, ttft_ms=svc.ttft_ms)
    return check_phase(svc, rep, catalog, q)


def _check_modelled(svc: InferenceService, rep: ReplicaRow, catalog: Catalog) -> tuple[str, P99]:
    """Recompute the replica at the service's mean sizes, sized as the options are: the largest
    Poisson rate whose p99 latencies meet the service's targets."""
    if svc.model is None:
        return "a generic service has only measured replicas", (0.0, 0.0)
    est, why = _recompute(
        svc, rep, catalog, svc.input_tokens, svc.output_tokens, tpot_ms=svc.tpot_ms, ttft_ms=svc.ttft_ms
    )
    if est is None:
        return why, (0.0, 0.0)
    p99 = (est.ttft_p99_ms, est.tpot_p99_ms)
    if rep.rps_per_replica > est.planning_requests_per_s + 1e-6:
        return f"claims {rep.rps_per_replica} rps > {est.planning_requests_per_s:.3f}", p99
    if rep.batch > est.max_batch_by_memory:
        limit = est.max_batch_by_memory
        return f"does not fit: concurrency {rep.batch} needs more KV cache than fits (at most {limit})", p99
    if rep.batch != est.batch:
        return f"claims a mean batch of {rep.batch} at {rep.rps_per_replica} rps, recomputed {est.batch}", p99
    if abs(rep.ttft_ms - est.ttft_p99_ms) > 0.01 or abs(rep.tpot_ms - est.tpot_p99_ms) > 0.01:
        return f"claims p99 TTFT/TPOT {rep.ttft_ms}/{rep.tpot_ms} ms, recomputed {p99[0]:.3f}/{p99[1]:.3f}", p99
    return "", p99


def _check_measured(svc: InferenceService, rep: ReplicaRow, catalog: Catalog) -> tuple[str, P99]:
    """A measured replica can claim no more than the user's own benchmark."""
    for m in svc.measured:
        same = (catalog.find_gpu_id(m.gpu), m.precision, m.gpus_per_replica) == (
            rep.gpu,
            rep.precision,
            rep.gpus_per_replica,
        )
        if same:
            p99 = (m.ttft_ms or 0.0, m.tpot_ms or 0.0)
            if rep.rps_per_replica > m.requests_per_s + 1e-6:
                return f"claims {rep.rps_per_replica} rps > measured {m.requests_per_s}", p99
            return "", p99
    return "marked measured, but the problem has no such measurement", (0.0, 0.0)
