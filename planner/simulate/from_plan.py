"""What to simulate, read from a plan and the problem it was solved for.

The plan carries the replicas (GPU, chassis, precision, GPUs per replica, attention DP,
counts), the routing of each bucket and the planned rate; the problem carries what the plan
does not: the model's shape, the request sizes (mean sizes, a mix, or its CSV trace) and the
latency targets. Each service is simulated in the year of its peak planned rate.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from planner.catalog import Catalog
from planner.errors import InputError
from planner.io.problem_io import LoadedProblem
from planner.io.requests_csv import DEFAULT_INPUT_EDGES, DEFAULT_OUTPUT_EDGES, bucket_requests, read_requests_csv
from planner.perf.engine import Engine
from planner.perf.inference import engine_for
from planner.perf.inference_types import InferenceQuery
from planner.perf.links import link_for
from planner.perf.shapes import shape_of
from planner.perf.speculation import prefix_of, speculation_of
from planner.schema.plan import InferenceRow, Plan, ReplicaRow
from planner.schema.problem import InferenceService
from planner.simulate.analytic import analytic_p99s
from planner.simulate.fleet import Kind
from planner.simulate.traffic import Bucket


@dataclass(frozen=True)
class ServiceSpec:
    """One service as the simulator replays it."""

    name: str
    rate_per_s: float
    year: int | None  # the plan row's operating year (None: every year)
    buckets: list[Bucket]
    trace: tuple[list[tuple[int, int]], list[int]] | None  # observed (input, output) rows and their buckets
    kinds: list[Kind]
    kind_labels: list[str]
    routes: list[list[float]]  # routes[bucket][kind]: the bucket's share on that kind
    ttft_ms: float
    tpot_ms: float
    analytic_ttft_p99_ms: float
    analytic_tpot_p99_ms: float
    bucket_analytic: list[tuple[float, float]]  # per bucket: (TTFT, TPOT) p99, the load model at this load
    delay_s: float  # fixed per request before the engine sees it
    notes: list[str]
    planned_ttft_p99_ms: float = 0.0  # the plan's rows: at each kind's sizing rate (its capacity)
    planned_tpot_p99_ms: float = 0.0
    prefix_shared_tokens: int = 0  # the service's prefix cache: shared tokens found at this rate
    prefix_hit_rate: float = 0.0


@dataclass(frozen=True)
class Skipped:
    name: str
    reason: str


def service_specs(
    plan: Plan, loaded: LoadedProblem, catalog: Catalog, names: Collection[str] | None = None
) -> list[ServiceSpec | Skipped]:
    """Every service of the problem (or those ``names`` names), in its order: a spec, or why it
    cannot be simulated."""
    if plan.status == "infeasible":
        raise InputError("the plan is infeasible: there is nothing to simulate", file=plan.problem)
    out: list[ServiceSpec | Skipped] = []
    for svc in loaded.problem.inference:
        if names is not None and svc.name not in names:
            continue
        if not any(r.name == svc.name for r in plan.inference):
            raise InputError(
                f"service {svc.name!r} of the problem is not in the plan",
                hint="give the problem the plan was solved for",
            )
        if svc.model is None:
            out.append(Skipped(svc.name, "a generic service (no model): planned from measurements alone"))
            continue
        row = peak_row(plan, svc.name)
        if any(r.mode != "aggregated" for r in row.replicas):
            why = "disaggregated prefill and decode: the simulator runs aggregated replicas (the phase model holds it)"
            out.append(Skipped(svc.name, why))
            continue
        out.append(_spec(svc, row, loaded, catalog))
    return out


def peak_row(plan: Plan, name: str) -> InferenceRow:
    """The service's row a simulation replays: its peak planned rate (the latest year of it)."""
    return max((r for r in plan.inference if r.name == name), key=lambda r: (r.required_rps, r.year or 0))


def _spec(svc: InferenceService, row: InferenceRow, loaded: LoadedProblem, catalog: Catalog) -> ServiceSpec:
    buckets = _buckets(svc)
    routes = _routes(svc, row, buckets)
    used = [k for k in range(len(row.replicas)) if any(r[k] > 0 for r in routes)]
    if not used:
        raise InputError(f"service {svc.name!r}: the plan routes its requests to no replica")
    notes = []
    kinds: list[Kind] = []
    for k in used:
        rep = row.replicas[k]
        if rep.count < 1:
            raise InputError(f"service {svc.name!r}: requests are routed to {rep.gpu}, of which the plan has none")
        if rep.source == "measured":
            notes.append(f"{rep.gpu} x{rep.gpus_per_replica} was sized on your measurement; simulated with the model")
        mean_in, mean_out = _mean_sizes(buckets, [r[k] for r in routes])
        kinds.append(Kind(_engine(svc, rep, catalog, mean_in, mean_out), rep.count))
    delay_s = catalog.efficiency.serving.ttft_overhead_ms / 1e3
    kind_routes = [[r[k] for k in used] for r in routes]
    service_p99, bucket_p99 = analytic_p99s(kinds, buckets, kind_routes, row.required_rps)
    return ServiceSpec(
        name=svc.name,
        rate_per_s=row.required_rps,
        year=row.year,
        buckets=buckets,
        trace=_trace(svc, loaded, buckets),
        kinds=kinds,
        kind_labels=[_label(row.replicas[k]) for k in used],
        routes=kind_routes,
        ttft_ms=svc.ttft_ms,
        tpot_ms=svc.tpot_ms,
        analytic_ttft_p99_ms=service_p99[0],
        analytic_tpot_p99_ms=service_p99[1],
        bucket_analytic=bucket_p99,
        planned_ttft_p99_ms=max(_p99(row.replicas[k])[0] for k in used),
        planned_tpot_p99_ms=max(_p99(row.replicas[k])[1] for k in used),
        delay_s=delay_s,
        notes=notes,
        prefix_shared_tokens=svc.prefix_cache.shared_tokens if svc.prefix_cache else 0,
        prefix_hit_rate=svc.prefix_cache.hit_rate if svc.prefix_cache else 0.0,
    )


def _label(rep: ReplicaRow) -> str:
    dp = f" dp{rep.attention_dp}" if rep.attention_dp > 1 else ""
    return f"{rep.gpu} x{rep.gpus_per_replica} {rep.precision}{dp}"


def _p99(rep: ReplicaRow) -> tuple[float, float]:
    return (rep.ttft_p99_ms or rep.ttft_ms, rep.tpot_p99_ms or rep.tpot_ms)


def _buckets(svc: InferenceService) -> list[Bucket]:
    if svc.mix is None:
        return [Bucket("all", svc.input_tokens, svc.output_tokens, 1.0)]
    return [Bucket(b.label, b.input_tokens, b.output_tokens, b.share) for b in svc.mix.sized]


def _routes(svc: InferenceService, row: InferenceRow, buckets: list[Bucket]) -> list[list[float]]:
    """Per bucket, its share on each replica kind of the row."""
    kinds = len(row.replicas)
    if svc.mix is None or not row.routing:
        # one size: the kinds share the load by capacity (count x requests/s per replica)
        weights = [r.count * r.rps_per_replica for r in row.replicas]
        if sum(weights) <= 0:
            weights = [float(r.count) for r in row.replicas]
        return [weights for _ in buckets]
    by_label = {b.bucket.lower(): b for b in row.routing}
    routes = []
    for bucket in buckets:
        route = by_label.get(bucket.label.lower())
        if route is None:
            raise InputError(f"service {svc.name!r}: the plan does not route bucket {bucket.label!r}")
        shares = [0.0] * kinds
        for r in route.routes:
            if not 0 <= r.replica < kinds:
                raise InputError(f"service {svc.name!r}: bucket {bucket.label!r} is routed to an unlisted replica kind")
            shares[r.replica] += r.share
        routes.append(shares)
    return routes


def _mean_sizes(buckets: list[Bucket], shares: list[float]) -> tuple[int, int]:
    """Mean prompt and output of the requests a kind gets (its engine's KV per token follows them)."""
    weights = [b.share * s for b, s in zip(buckets, shares, strict=True)]
    total = sum(weights) or 1.0
    mean_in = sum(w * b.input_tokens for w, b in zip(weights, buckets, strict=True)) / total
    mean_out = sum(w * b.output_tokens for w, b in zip(weights, buckets, strict=True)) / total
    return max(1, round(mean_in)), max(1, round(mean_out))


def _engine(svc: InferenceService, rep: ReplicaRow, catalog: Catalog, input_tokens: int, output_tokens: int) -> Engine:
    assert svc.model is not None
    if rep.gpu not in catalog.gpus or rep.server not in catalog.servers:
        raise InputError(f"service {svc.name!r}: the plan's {rep.server}/{rep.gpu} is not in the catalog")
    gpu, chassis = catalog.gpus[rep.gpu], catalog.servers[rep.server]
    shape = shape_of(svc.model, catalog)
    if rep.speculation_tokens_per_step is not None and svc.speculative is None:
        raise InputError(f"service {svc.name!r}: the plan speculates, the problem allows no speculative decoding")
    speculates = rep.speculation_tokens_per_step is not None and svc.speculative is not None
    q = InferenceQuery(
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
    )
    eff = catalog.efficiency
    engine = engine_for(q, eff.generations[gpu.generation], eff.serving)
    if engine is None:
        raise InputError(
            f"service {svc.name!r}: {rep.gpu} x{rep.gpus_per_replica} {rep.precision} cannot hold the model "
            f"and one request of {input_tokens}+{output_tokens} tokens"
        )
    return engine


def _trace(
    svc: InferenceService, loaded: LoadedProblem, buckets: list[Bucket]
) -> tuple[list[tuple[int, int]], list[int]] | None:
    """A mix given as a CSV of observed requests: its rows, each with the bucket it falls in."""
    raw = _raw_service(loaded, svc.name)
    mix = raw.get("mix") if raw else None
    if not isinstance(mix, dict) or not isinstance(mix.get("csv"), str):
        return None
    path = (loaded.folder or Path.cwd()) / mix["csv"]
    rows = read_requests_csv(path, str(path), key=f"inference.{svc.name}.mix.csv")
    edges_in = mix.get("input_edges") or DEFAULT_INPUT_EDGES
    edges_out = mix.get("output_edges") or DEFAULT_OUTPUT_EDGES
    index = {b.label.lower(): k for k, b in enumerate(buckets)}
    names: dict[tuple[int, int], int] = {}
    of_row = []
    for inp, out in rows:
        cell = (bisect_left(edges_in, inp), bisect_left(edges_out, out))
        if cell not in names:  # the bucket's name as the problem loader gave it
            label = bucket_requests([(inp, out)], edges_in, edges_out)[0]["name"]
            names[cell] = index[str(label).lower()]
        of_row.append(names[cell])
    return rows, of_row


def _raw_service(loaded: LoadedProblem, name: str) -> dict[str, object] | None:
    services = loaded.raw.get("inference") if isinstance(loaded.raw, dict) else None
    for raw in services if isinstance(services, list) else []:
        if isinstance(raw, dict) and raw.get("name") == name:
            return raw
    return None
