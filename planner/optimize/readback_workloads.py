"""Read a solved model back into the workloads' plan rows: training jobs (option, start, end)
and services (replica kinds, a mix's routing, a window), each figure as the model holds it."""

from __future__ import annotations

from typing import Any

from planner import units as u
from planner.domains import claimed_loss_rps
from planner.limits.measure import capacity_rps
from planner.optimize.built import Built
from planner.optimize.solve import Solved
from planner.options.types import InferenceOption
from planner.schema.model_ref import ConfigModel
from planner.schema.plan import BucketRoute, InferenceRow, ReplicaRow, RouteShare, TrainingRow
from planner.schema.problem import InferenceService, Problem


def training_rows(b: Built, s: Solved, problem: Problem) -> list[TrainingRow]:
    rows = []
    for job in problem.training:
        chosen = next(o for o, x in b.train[job.name] if s.value(x))
        start = s.value(b.starts[job.name]) / u.TIME_PER_DAY
        days = chosen.days
        rows.append(
            TrainingRow(
                name=job.name,
                gpu=chosen.gpu,
                gpus=chosen.gpus,
                server=chosen.pool.server,
                fabric=chosen.pool.fabric,
                days=round(days, 3),
                start_day=start,
                end_day=round(start + u.days_up(days) / u.TIME_PER_DAY, 3),
                deadline_days=job.deadline_days,
                precision=job.precision,
                method=job.method,
                rented=chosen.rent_usd_per_gpu_hour is not None,
                rent_usd_per_gpu_hour=chosen.rent_usd_per_gpu_hour,
                mfu=round(chosen.estimate.mfu, 4),
                tflops_per_gpu=round(chosen.estimate.tflops_per_gpu, 1),
                hot_spare_servers=chosen.estimate.hot_spare_servers,
                hot_spare_gpus=chosen.estimate.hot_spare_gpus,
                goodput=round(chosen.estimate.goodput, 5),
                interruptions_expected=round(chosen.estimate.interruptions_expected, 2),
                checkpoint_interval_hours=round(chosen.estimate.checkpoint_interval_hours, 3),
            )
        )
    return rows


def inference_rows(b: Built, s: Solved, problem: Problem) -> list[InferenceRow]:
    rows = []
    for svc in problem.inference:
        if svc.model is None:
            model = "generic"
        else:
            model = (
                svc.model
                if isinstance(svc.model, str)
                else svc.model.entry.id
                if isinstance(svc.model, ConfigModel)
                else f"dense-{svc.model.params_b:g}b"
            )
        for y in range(b.periods):
            year = None if b.periods == 1 else y + 1
            required = (
                svc.peak_requests_per_s(problem.horizon_years) if year is None else svc.requests_per_s_in_year(year)
            )
            kinds = [(i, o, s.value(rs[y])) for i, (o, rs) in enumerate(b.serve[svc.name])]
            kinds = [(i, o, n) for i, o, n in kinds if n]
            routing = _routing(b, s, svc, kinds, y, required) if svc.mix is not None else []
            reps = []
            per_domain = b.serve_rates[svc.name][3]
            for index, (i, o, n) in enumerate(kinds):
                rps = (
                    _replica_rps(o, routing, index)
                    if svc.mix is not None
                    else u.rps_down(o.rps_per_replica) / u.RATE_PER_RPS
                )
                e = o.estimate
                reps.append(
                    ReplicaRow(
                        gpu=o.gpu,
                        server=o.pool.server,
                        gpus_per_replica=o.gpus_per_replica,
                        precision=o.precision,
                        count=n,
                        attention_dp=o.attention_dp,
                        fabric=o.pool.fabric,
                        per_domain=min(n, per_domain[i]),
                        rps_per_replica=rps,
                        ttft_ms=round(e.ttft_p99_ms, 3),  # targets bind the p99
                        tpot_ms=round(e.tpot_p99_ms, 3),
                        batch=e.batch,
                        ttft_p99_ms=round(e.ttft_p99_ms, 3),
                        tpot_p99_ms=round(e.tpot_p99_ms, 3),
                        ttft_mean_ms=round(e.ttft_ms, 3),
                        tpot_mean_ms=round(e.tpot_ms, 3),
                        source="measured" if o.measured else "model",
                        rented=o.rent_usd_per_gpu_hour is not None,
                        rent_usd_per_gpu_hour=o.rent_usd_per_gpu_hour,
                        mode=o.mode,
                        kv_group=o.kv_group,
                        kv_link=str(e.factors.get("kv_link", "")) if o.disaggregated else "",
                        kv_gb_per_request=round(o.kv_gb_per_request, 6),
                        kv_transfer_ms=round(float(e.factors.get("kv_transfer_ms", 0.0)), 3)
                        if o.mode == "prefill"
                        else 0.0,
                        speculation_tokens_per_step=(
                            round(o.speculation.tokens_per_step, 4) if o.speculation else None
                        ),
                    )
                )
            capacity = capacity_rps(reps)
            start, end = _window(b, s, svc, problem)
            rows.append(
                InferenceRow(
                    name=svc.name,
                    model=model,
                    required_rps=required,
                    capacity_rps=round(capacity, 3),
                    spare_replicas=svc.spare_replicas,
                    spare_domain=svc.spare_domain,
                    domain_loss_rps=round(claimed_loss_rps(reps), 3),
                    replicas=reps,
                    year=year,
                    start_day=start,
                    end_day=end,
                    routing=routing,
                    **serving_mode(reps),
                )
            )
    return rows


def serving_mode(reps: list[ReplicaRow]) -> dict[str, Any]:
    """A service's serving mode, the KV traffic its prefill replicas send at their planning
    capacity (what the NIC limit holds), and its prefill : decode GPUs."""
    split = [r for r in reps if r.mode != "aggregated"]
    if not split:
        return {}
    kv = sum(r.count * r.rps_per_replica * r.kv_gb_per_request for r in split if r.mode == "prefill")
    workers = {p: sum(r.count for r in split if r.mode == p) for p in ("prefill", "decode")}
    return {
        "serving_mode": "mixed" if len(split) < len(reps) else "disaggregated",
        "kv_transfer_gb_per_s": round(kv, 3),
        "prefill_decode_ratio": f"{workers['prefill']}:{workers['decode']}",
    }


def _routing(
    b: Built, s: Solved, svc: InferenceService, kinds: list[tuple[int, InferenceOption, int]], y: int, required: float
) -> list[BucketRoute]:
    """Bucket -> replica kind -> share of the bucket, as the solver routed it."""
    assert svc.mix is not None
    slices = svc.mix.slices
    routes = b.routes[svc.name]
    out = []
    for k, bucket in enumerate(svc.mix.sized):
        rps = required * (1 + svc.min_spare_share) * bucket.share
        shares = []
        for index, (i, o, _) in enumerate(kinds):
            z = routes.get((i, k, y))
            got = s.value(z) if z is not None else 0
            if got:
                e = o.buckets[k]
                assert e is not None  # the model routes a bucket only to kinds that can serve it
                shares.append(
                    RouteShare(
                        replica=index,
                        gpu=o.gpu,
                        precision=o.precision,
                        gpus_per_replica=o.gpus_per_replica,
                        share=got / slices,
                        rps=rps * got / slices,
                        ttft_ms=round(e.ttft_p99_ms, 3),
                        tpot_ms=round(e.tpot_p99_ms, 3),
                    )
                )
        out.append(
            BucketRoute(
                bucket=bucket.label,
                input_tokens=bucket.input_tokens,
                output_tokens=bucket.output_tokens,
                share=bucket.share,
                rps=rps,
                routes=shares,
            )
        )
    return out


def _window(b: Built, s: Solved, svc: InferenceService, problem: Problem) -> tuple[float | None, float | None]:
    """A windowed service's start and end day as the model holds them; (None, None) otherwise."""
    if not svc.windowed:
        return None, None
    start = b.service_starts[svc.name]
    begin = (start if isinstance(start, int) else s.value(start)) / u.TIME_PER_DAY
    end = u.days_up(svc.end_day if svc.end_day is not None else problem.horizon_years * 365) / u.TIME_PER_DAY
    return begin, end


def _replica_rps(o: InferenceOption, routing: list[BucketRoute], index: int) -> float:
    """A mix replica's capacity for the traffic routed to it: its requests per unit of its time
    (slower when it serves more than one bucket: ``InferenceOption.colocated_factor``)."""
    rps = busy = 0.0
    served = 0
    for k, bucket in enumerate(routing):
        mine = [r for r in bucket.routes if r.replica == index]
        served += bool(mine)
        for r in mine:
            rps += r.rps
            busy += r.rps / o.bucket_rps(k)
    if served > 1:
        busy /= max(o.colocated_factor, 1e-9)  # the model keeps buckets apart where it is 0
    return round(rps / busy, 3) if busy else 0.0
