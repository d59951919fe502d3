"""Disaggregated services re-checked: each prefill and decode replica recomputed with the phase
model on the link its KV group crosses, the groups as the options define them, and each fabric
pool's KV traffic within its servers' NICs."""

from __future__ import annotations

from collections import defaultdict

from planner.catalog import Catalog
from planner.options.disagg import kv_routes
from planner.perf.disagg import estimate_phase
from planner.perf.inference_types import InferenceQuery
from planner.schema.plan import Plan, ReplicaRow
from planner.schema.problem import InferenceService

P99 = tuple[float, float]


def check_phase(svc: InferenceService, rep: ReplicaRow, catalog: Catalog, q: InferenceQuery) -> tuple[str, P99]:
    """A prefill or decode replica recomputed from its query (the plan's replica kind, with the
    service's targets): its capacity, latency and KV route ("" if it holds)."""
    if svc.disaggregation == "never":
        return "the service says disaggregation: never", (0.0, 0.0)
    chassis, gpu = catalog.servers[rep.server], catalog.gpus[rep.gpu]
    routes = [(link, group) for key, link, group in kv_routes(catalog, chassis, gpu) if key.fabric == rep.fabric]
    if not routes or routes[0][1] != rep.kv_group:
        return f"no KV route {rep.kv_group!r} for {rep.server} on {rep.fabric}", (0.0, 0.0)
    eff = catalog.efficiency
    est = estimate_phase(q, rep.mode, routes[0][0], eff.generations[gpu.generation], eff.serving)
    if not est.fits:
        return f"{rep.mode} does not fit: {est.reason}", (0.0, 0.0)
    p99 = (est.ttft_p99_ms, est.tpot_p99_ms)
    if rep.rps_per_replica > est.planning_requests_per_s + 1e-6:
        return f"{rep.mode} claims {rep.rps_per_replica} rps > {est.planning_requests_per_s:.3f}", p99
    if abs(rep.ttft_ms - p99[0]) > 0.01 or abs(rep.tpot_ms - p99[1]) > 0.01:
        return (
            f"{rep.mode} claims p99 TTFT/TPOT {rep.ttft_ms}/{rep.tpot_ms} ms, recomputed {p99[0]:.3f}/{p99[1]:.3f}",
            p99,
        )
    gb = float(est.factors["kv_transfer_gb_per_request"])
    if abs(rep.kv_gb_per_request - gb) > 1e-5:
        return f"claims {rep.kv_gb_per_request} GB of KV per request, recomputed {gb:.6f}", p99
    return "", p99


def check_kv_links(catalog: Catalog, plan: Plan, errs: list[str]) -> None:
    """Every fabric pool's KV caches, out of its prefill replicas and into its decode replicas
    at their planning capacity, within the NICs of the servers the plan buys for it."""
    traffic: dict[tuple[str, str, str, int | None, str], float] = defaultdict(float)
    for row in plan.inference:
        for r in row.replicas:
            if r.mode != "aggregated" and r.fabric != "none" and not r.rented:
                traffic[(r.server, r.gpu, r.fabric, row.year, r.mode)] += (
                    r.count * r.rps_per_replica * r.kv_gb_per_request
                )
    eff = catalog.efficiency.serving.link_eff
    for (server, gpu, fabric, _year, mode), gb_per_s in sorted(traffic.items(), key=str):
        chassis = catalog.servers.get(server)
        if chassis is None or fabric not in catalog.fabrics:
            errs.append(f"KV traffic on {server}/{gpu}/{fabric}: not in the catalog")
            continue
        servers = sum(s.count for s in plan.servers if (s.server, s.gpu, s.fabric) == (server, gpu, fabric))
        nic_gb_per_s = servers * chassis.scaleout_nics * catalog.fabrics[fabric].link_gbit_per_s / 8 * eff
        if gb_per_s > nic_gb_per_s + 1e-3:
            errs.append(
                f"{server}/{gpu}/{fabric}: {mode} replicas move {gb_per_s:.3f} GB/s of KV cache, "
                f"its {servers} servers' NICs carry {nic_gb_per_s:.3f}"
            )
