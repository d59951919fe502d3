"""Simulate a plan's services: traffic in, latency figures out, per service and per bucket.

Each service gets its own random stream (the seed and the service's position), so a
service's figures do not change when another service is added or removed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from planner.catalog import Catalog
from planner.io.problem_io import LoadedProblem
from planner.schema.plan import Plan
from planner.simulate.fleet import Outcome, ReplayJob, gather, random_replay_jobs, replay, route_kinds
from planner.simulate.from_plan import ServiceSpec, Skipped, service_specs
from planner.simulate.stats import Latencies
from planner.simulate.traffic import Traffic, poisson_traffic, with_prefix_hits


@dataclass
class ServiceResult:
    name: str
    row: dict[str, Any]  # the JSON row (fixed keys first)
    holds: bool | None  # every target met at the p99 (None: not simulated)
    seconds: float = 0.0
    buckets: list[dict[str, Any]] = field(default_factory=list)


def simulate_service(
    spec: ServiceSpec, requests: int, seed: int, stream: int = 0, router: str = "random", workers: int = 1
) -> ServiceResult:
    """Replay ``requests`` Poisson requests at the spec's planned rate through its replicas
    (their replays in ``workers`` processes where the router allows)."""
    start = time.perf_counter()
    traffic, kinds, rng = _traffic(spec, requests, seed, stream)
    outcome = replay(spec.kinds, traffic, kinds, spec.delay_s, router, rng, workers)
    return _result(spec, traffic, outcome, start)


@dataclass
class Replaying:
    """A service's simulation under the ``random`` router with its replays cut into jobs
    (``fleet.replay_alone``), to run anywhere and gather (``replayed``): the same numbers as
    ``simulate_service``'s."""

    spec: ServiceSpec
    traffic: Traffic
    kinds: np.ndarray
    jobs: list[ReplayJob]
    start: float


def replaying(spec: ServiceSpec, requests: int, seed: int, stream: int, parts: int) -> Replaying:
    start = time.perf_counter()
    traffic, kinds, rng = _traffic(spec, requests, seed, stream)
    jobs = random_replay_jobs(spec.kinds, traffic, kinds, spec.delay_s, rng, parts)
    return Replaying(spec, traffic, kinds, jobs, start)


def replayed(r: Replaying, done: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> ServiceResult:
    """The service's result from its jobs' replays, in the jobs' order."""
    first, finish = gather(len(r.traffic.send_s), done)
    return _result(r.spec, r.traffic, Outcome(r.traffic.send_s, first, finish, r.kinds), r.start)


def _traffic(
    spec: ServiceSpec, requests: int, seed: int, stream: int
) -> tuple[Traffic, np.ndarray, np.random.Generator]:
    """The service's requests, their replica kinds, and the stream the router draws from next."""
    rng = np.random.default_rng([seed, stream])
    traffic = poisson_traffic(spec.rate_per_s, requests, rng, spec.buckets, spec.trace)
    traffic = with_prefix_hits(traffic, spec.prefix_shared_tokens, spec.prefix_hit_rate, rng)
    return traffic, route_kinds(traffic, spec.routes, rng), rng


def _result(spec: ServiceSpec, traffic: Traffic, outcome: Outcome, start: float) -> ServiceResult:
    lat = Latencies.of(outcome.send_s, outcome.first_s, outcome.finish_s, traffic.output_tokens)
    summary = lat.summary(spec.ttft_ms, spec.tpot_ms)
    row: dict[str, Any] = {
        "name": spec.name,
        "requests": summary["requests"],
        "ttft_p50_ms": summary["ttft_p50_ms"],
        "ttft_p99_ms": summary["ttft_p99_ms"],
        "tpot_p50_ms": summary["tpot_p50_ms"],
        "tpot_p99_ms": summary["tpot_p99_ms"],
        "e2e_p99_ms": summary["e2e_p99_ms"],
        "slo_attainment": summary["slo_attainment"],
        "analytic_ttft_p99_ms": spec.analytic_ttft_p99_ms,
        "analytic_tpot_p99_ms": spec.analytic_tpot_p99_ms,
        "planned_ttft_p99_ms": spec.planned_ttft_p99_ms,
        "planned_tpot_p99_ms": spec.planned_tpot_p99_ms,
        **{k: v for k, v in summary.items() if k.endswith(("p90_ms", "e2e_p50_ms"))},
        "ttft_target_ms": spec.ttft_ms,
        "tpot_target_ms": spec.tpot_ms,
        "rate_per_s": spec.rate_per_s,
        "year": spec.year,
        "replicas": {label: k.count for label, k in zip(spec.kind_labels, spec.kinds, strict=True)},
    }
    for name in ("ttft", "tpot"):  # the check: analytic within 10% of simulated
        sim, analytic = row[f"{name}_p99_ms"], row[f"analytic_{name}_p99_ms"]
        row[f"{name}_p99_sim_over_analytic"] = round(sim / analytic, 4) if sim is not None and analytic else None
    holds = _holds(row, spec)
    row["holds"] = holds
    if spec.notes:
        row["notes"] = spec.notes
    buckets = []
    if len(spec.buckets) > 1:
        for b, bucket in enumerate(spec.buckets):
            mine = traffic.bucket == b
            if not mine.any():
                continue
            part = lat.subset(mine).summary(spec.ttft_ms, spec.tpot_ms)
            analytic = spec.bucket_analytic[b]
            buckets.append(
                {
                    "bucket": bucket.label,
                    "input_tokens": bucket.input_tokens,
                    "output_tokens": bucket.output_tokens,
                    **part,
                    "analytic_ttft_p99_ms": analytic[0],
                    "analytic_tpot_p99_ms": analytic[1],
                }
            )
        row["buckets"] = buckets
    seconds = time.perf_counter() - start
    return ServiceResult(spec.name, row, holds, seconds, buckets)


def _holds(row: dict[str, Any], spec: ServiceSpec) -> bool:
    ttft, tpot = row["ttft_p99_ms"], row["tpot_p99_ms"]
    return (ttft is None or ttft <= spec.ttft_ms) and (tpot is None or tpot <= spec.tpot_ms)


def skipped_result(s: Skipped) -> ServiceResult:
    return ServiceResult(s.name, {"name": s.name, "requests": 0, "skipped": s.reason}, None)


def simulate_plan(
    plan: Plan,
    loaded: LoadedProblem,
    catalog: Catalog,
    requests: int = 30_000,
    seed: int = 0,
    workers: int = 1,
    router: str = "random",
    known: dict[str, ServiceResult] | None = None,
) -> list[ServiceResult]:
    """Every service of the plan, simulated at its peak planned rate (generic ones skipped);
    services in ``workers`` processes, or one service's replicas (the same numbers however many).
    ``known``: results of services simulated already, with these requests, seed and router, on the
    rows this plan has (``simulate.speculate``), by name: they are not simulated again."""
    from planner.executors import map_ordered

    known = known or {}
    names = [svc.name for svc in loaded.problem.inference]
    stream_of = {name: stream for stream, name in enumerate(names)}  # a service's random stream: its position
    specs = service_specs(plan, loaded, catalog, {n for n in names if n not in known})  # no spec for the others
    todo = [(stream_of[spec.name], spec) for spec in specs]
    simulated = sum(not isinstance(spec, Skipped) for _, spec in todo)
    inner = workers if simulated == 1 else 1
    jobs = [(spec, requests, seed, stream, router, inner) for stream, spec in todo]
    found = map_ordered(_simulate_job, jobs, workers=min(workers, simulated))
    done = dict(zip([stream for stream, _ in todo], found, strict=True))
    return [done[stream] if stream in done else known[name] for stream, name in enumerate(names)]


def _simulate_job(job: tuple[ServiceSpec | Skipped, int, int, int, str, int]) -> ServiceResult:
    spec, requests, seed, stream, router, workers = job
    if isinstance(spec, Skipped):
        return skipped_result(spec)
    return simulate_service(spec, requests, seed, stream, router, workers)


def report_json(results: list[ServiceResult], requests: int, seed: int, router: str = "random") -> dict[str, Any]:
    return {
        "services": [r.row for r in results],
        "requests_per_service": requests,
        "seed": seed,
        "router": router,
        "holds": all(r.holds is not False for r in results),
    }
