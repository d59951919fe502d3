"""Re-check a plan against the problem without the solver.

Everything is recomputed from the catalog and the performance model: prices,
power, GPU counts, rack fit, network size, capacities, latencies, schedule and
money. Returns the list of violations (empty when the plan holds).
"""

from __future__ import annotations

import math
from collections import defaultdict

from planner.catalog import Catalog
from planner.perf.inference import InferenceQuery, estimate_inference
from planner.perf.shapes import shape_of
from planner.schema.plan import Plan, ReplicaRow
from planner.schema.problem import InferenceService, Problem

TOL_USD = 1.0
REL = 1e-6


def verify(problem: Problem, catalog: Catalog, plan: Plan) -> list[str]:
    if plan.status == "infeasible":
        return []
    errs: list[str] = []
    _servers_and_money(problem, catalog, plan, errs)
    _gpu_usage(problem, catalog, plan, errs)
    _training(problem, plan, errs)
    _inference(problem, catalog, plan, errs)
    _finance(plan, errs)
    return errs


def _close(a: float, b: float, tol: float = TOL_USD) -> bool:
    return abs(a - b) <= max(tol, REL * max(abs(a), abs(b)))


def _servers_and_money(problem: Problem, catalog: Catalog, plan: Plan, errs: list[str]) -> None:
    site, fin = problem.site, problem.finance
    it_w = 0.0
    racks = 0
    ports: dict[str, int] = defaultdict(int)
    for row in plan.servers:
        chassis = catalog.servers[row.server]
        gpu = catalog.gpus[row.gpu]
        if row.gpu not in chassis.gpus:
            errs.append(f"server {row.server} cannot hold {row.gpu}")
        price = round(chassis.base_price.usd + chassis.gpus_per_server * catalog.gpu_price_usd(row.gpu))
        if not _close(price, row.unit_price_usd):
            errs.append(f"{row.server}+{row.gpu}: unit price {row.unit_price_usd} != catalog {price}")
        fabric = catalog.fabrics[row.fabric]
        nics = chassis.scaleout_nics if fabric.kind != "none" else 0
        ports[row.fabric] += nics * row.count
        power = chassis.base_power_w + chassis.gpus_per_server * gpu.tdp_w + nics * fabric.nic_power_w
        it_w += power * row.count
        fit = min(site.rack_units // chassis.rack_units, int(site.rack_power_kw * 1000 // power))
        if fit < 1 or row.racks < math.ceil(row.count / fit):
            errs.append(
                f"{row.server}+{row.gpu}: {row.count} servers need "
                f"{math.ceil(row.count / max(fit, 1))} racks, plan has {row.racks}"
            )
        racks += row.racks
        if row.gpu.lower() in {x.lower() for x in problem.catalog.exclude}:
            errs.append(f"{row.gpu} is excluded by the problem but bought")
    for net in plan.network:
        fabric = catalog.fabrics[net["fabric"]]
        if net["ports"] != ports[net["fabric"]]:
            errs.append(f"fabric {fabric.id}: {net['ports']} ports, servers have {ports[net['fabric']]} NICs")
        r = fabric.switch_radix
        p = net["ports"]
        leaves_needed = 1 if p <= r else math.ceil(p / (r // 2))
        spines_needed = 0 if p <= r else math.ceil(leaves_needed / 2)
        if net["leaves"] < leaves_needed or net["spines"] < spines_needed:
            errs.append(f"fabric {fabric.id}: {p} ports need {leaves_needed} leaves and {spines_needed} spines")
        it_w += (net["leaves"] + net["spines"]) * fabric.switch_power_w
        racks += net["racks"]
    missing = {f for f, n in ports.items() if n} - {n["fabric"] for n in plan.network}
    if missing:
        errs.append(f"servers on fabrics {sorted(missing)} but no network bought")
    if not _close(it_w / 1000, plan.it_power_kw, 0.01):
        errs.append(f"IT power {plan.it_power_kw} kW != recomputed {it_w / 1000:.3f} kW")
    if site.power_kw is not None and it_w / 1000 * fin.pue > site.power_kw + 1e-6:
        errs.append(f"site power: {it_w / 1000 * fin.pue:.3f} kW facility > {site.power_kw} kW")
    if racks != plan.racks:
        errs.append(f"racks: plan says {plan.racks}, rows add to {racks}")
    if site.racks is not None and racks > site.racks:
        errs.append(f"racks: {racks} > {site.racks} available")
    total = sum(r.extended_price_usd for r in plan.purchase)
    for r in plan.purchase:
        if not _close(r.quantity * r.unit_price_usd, r.extended_price_usd):
            errs.append(f"purchase {r.sku}: {r.quantity} x {r.unit_price_usd} != {r.extended_price_usd}")
    if not _close(total, plan.capex_usd):
        errs.append(f"purchase list sums to {total}, capex is {plan.capex_usd}")
    if fin.budget_usd is not None and plan.capex_usd > fin.budget_usd + TOL_USD:
        errs.append(f"budget: capex {plan.capex_usd:,.0f} > {fin.budget_usd:,.0f}")
    for gpu, units in problem.catalog.stock.items():
        bought = sum(r.count * r.gpus_per_server for r in plan.servers if r.gpu.lower() == gpu.lower())
        if bought > units:
            errs.append(f"stock:{gpu}: {bought} bought > {units} available")
    k = problem.policy.max_gpu_types
    if k is not None and len({r.gpu for r in plan.servers}) > k:
        errs.append(f"policy: {len({r.gpu for r in plan.servers})} GPU types > {k}")


def _gpu_usage(problem: Problem, catalog: Catalog, plan: Plan, errs: list[str]) -> None:
    """At every moment, the services' GPUs plus the running jobs' fit the servers bought."""
    have = {(r.server, r.gpu, r.fabric): r.count * r.gpus_per_server for r in plan.servers}
    held: dict[tuple[str, str, str], int] = defaultdict(int)
    runs: dict[tuple[str, str, str], list[tuple[float, float, int, str]]] = defaultdict(list)
    pricing = problem.finance.rent
    for t in plan.training:
        if t.rented:  # a cloud's GPUs, at the on-demand price
            if t.rent_usd_per_gpu_hour != catalog.rent_usd_per_gpu_hour(
                t.gpu, "on_demand" if pricing != "none" else "none"
            ):
                errs.append(f"job {t.name}: rented at {t.rent_usd_per_gpu_hour}, not the catalog's on-demand price")
            continue
        per = catalog.servers[t.server].gpus_per_server
        if t.gpus > per and t.fabric == "none":
            errs.append(f"job {t.name}: {t.gpus} GPUs span servers without a fabric")
        runs[(t.server, t.gpu, t.fabric)].append((t.start_day, t.end_day, t.gpus, t.name))
    for svc in plan.inference:
        for rep in svc.replicas:
            if not rep.rented:
                held[(rep.server, rep.gpu, "none")] += rep.count * rep.gpus_per_replica
            elif rep.rent_usd_per_gpu_hour != catalog.rent_usd_per_gpu_hour(rep.gpu, pricing):
                errs.append(
                    f"service {svc.name}: {rep.gpu} rented at {rep.rent_usd_per_gpu_hour}, not the {pricing} price"
                )
    for key in set(held) | set(runs):
        # the busiest moment is when some job starts (or at once, for services alone)
        moments = [start for start, _, _, _ in runs[key]] or [0.0]
        peak = max(held[key] + sum(g for s, e, g, _ in runs[key] if s <= t < e - 1e-9) for t in moments)
        if peak > have.get(key, 0):
            errs.append(f"{'/'.join(key)}: workloads need {peak} GPUs at once, plan buys {have.get(key, 0)}")


def _training(problem: Problem, plan: Plan, errs: list[str]) -> None:
    rows = {t.name: t for t in plan.training}
    for job in problem.training:
        t = rows.get(job.name)
        if t is None:
            errs.append(f"job {job.name} is not in the plan")
            continue
        if t.start_day + 1e-9 < job.release_day:
            errs.append(f"job {job.name} starts on day {t.start_day} before its release day {job.release_day}")
        if t.end_day < t.start_day + t.days - 0.01:
            errs.append(f"job {job.name}: end {t.end_day} is before start + duration")
        if t.end_day > job.deadline_days + 1e-9:
            errs.append(f"job {job.name} ends on day {t.end_day} after its deadline {job.deadline_days}")
        for dep in job.after:
            d = next((r for n, r in rows.items() if n.lower() == dep.lower()), None)
            if d and t.start_day + 1e-9 < d.end_day:
                errs.append(f"job {job.name} starts before {d.name} ends")


def _inference(problem: Problem, catalog: Catalog, plan: Plan, errs: list[str]) -> None:
    rows = {s.name: s for s in plan.inference}
    for svc in problem.inference:
        row = rows.get(svc.name)
        if row is None:
            errs.append(f"service {svc.name} is not in the plan")
            continue
        capacity = 0.0
        largest = 0.0
        for rep in row.replicas:
            problem_with = (
                _check_measured(svc, rep, catalog) if rep.source == "measured" else _check_modelled(svc, rep, catalog)
            )
            if problem_with:
                errs.append(f"service {svc.name}: {rep.gpu} x{rep.gpus_per_replica} {rep.precision}: {problem_with}")
            capacity += rep.count * rep.rps_per_replica
            largest = max(largest, rep.rps_per_replica)
        need = svc.peak_requests_per_s(problem.horizon_years)
        if capacity + 1e-6 < need + svc.spare_replicas * largest:
            errs.append(
                f"service {svc.name}: capacity {capacity:.3f} rps < {need} required"
                + (f" + {svc.spare_replicas} spare" if svc.spare_replicas else "")
            )


def _check_modelled(svc: InferenceService, rep: ReplicaRow, catalog: Catalog) -> str:
    """Recompute the replica with the performance model; targets are held as p99."""
    from planner.options import link_for

    gpu, chassis = catalog.gpus[rep.gpu], catalog.servers[rep.server]
    if svc.model is None:
        return "a generic service has only measured replicas"
    if rep.precision not in svc.precisions:
        return "precision not allowed"
    q = InferenceQuery(
        model=shape_of(svc.model, catalog),
        gpu=gpu,
        gpus=rep.gpus_per_replica,
        precision=rep.precision,
        input_tokens=svc.input_tokens,
        output_tokens=svc.output_tokens,
        link=link_for(chassis, gpu, rep.gpus_per_replica),
        concurrency=rep.batch,
    )
    eff = catalog.efficiency
    est = estimate_inference(q, eff.generations[gpu.generation], eff.serving)
    if not est.fits:
        return f"does not fit: {est.reason}"
    if est.tpot_p99_ms > svc.tpot_ms + 1e-6 or est.ttft_p99_ms > svc.ttft_ms + 1e-6:
        return f"misses latency (p99 TTFT {est.ttft_p99_ms:.0f} ms, TPOT {est.tpot_p99_ms:.1f} ms)"
    if rep.rps_per_replica > est.planning_requests_per_s + 1e-6:
        return f"claims {rep.rps_per_replica} rps > {est.planning_requests_per_s:.3f}"
    return ""


def _check_measured(svc: InferenceService, rep: ReplicaRow, catalog: Catalog) -> str:
    """A measured replica can claim no more than the user's own benchmark."""
    for m in svc.measured:
        same = (catalog.find_gpu_id(m.gpu), m.precision, m.gpus_per_replica) == (
            rep.gpu,
            rep.precision,
            rep.gpus_per_replica,
        )
        if same:
            if rep.rps_per_replica > m.requests_per_s + 1e-6:
                return f"claims {rep.rps_per_replica} rps > measured {m.requests_per_s}"
            return ""
    return "marked measured, but the problem has no such measurement"


def _finance(plan: Plan, errs: list[str]) -> None:
    pv = sum(c.present_value_usd for c in plan.cash_flows)
    if not _close(pv, plan.tco_usd):
        errs.append(f"cash flows sum to {pv:,.2f}, TCO is {plan.tco_usd:,.2f}")
    if not _close(sum(plan.tco_breakdown_usd.values()), plan.tco_usd):
        errs.append("TCO breakdown does not add up to the TCO")
