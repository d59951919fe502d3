"""Re-check a plan against the problem without the solver.

Everything is recomputed from the catalog and the performance model: prices,
power, GPU counts, rack fit, network size, capacities, latencies, schedule and
money. Returns the list of violations (empty when the plan holds).
"""

from __future__ import annotations

import math
from collections import defaultdict

from planner import limits
from planner import units as u
from planner.catalog import Catalog
from planner.limits.base import Measured
from planner.limits.measure import carried_rps
from planner.limits.table import every_limit, row_limit
from planner.perf.inference import InferenceEstimate, InferenceQuery, estimate_inference
from planner.perf.shapes import shape_of
from planner.schema.plan import InferenceRow, Plan, ReplicaRow
from planner.schema.problem import InferenceService, MixBucket, Problem

TOL_USD = 1.0
REL = 1e-6


def verify(problem: Problem, catalog: Catalog, plan: Plan) -> list[str]:
    if plan.status == "infeasible":
        return []
    errs: list[str] = []
    m = Measured()  # the limits' quantities as recomputed here, never as the plan states them
    _servers_and_money(problem, catalog, plan, errs, m)
    _gpu_usage(problem, catalog, plan, errs)
    _training(problem, plan, errs, m)
    _inference(problem, catalog, plan, errs, m)
    _finance(plan, errs)
    for fam in limits.FAMILIES:  # quantities of families that Measured has no field for
        fam.recompute(problem, catalog, plan, m)
    check_limits(problem, catalog, plan, m, errs)
    return errs


# How far a reported `used` may stand from the recomputed one (the plan rounds to cents,
# watts, thousandths of a millisecond and of a request/s).
USED_TOL = {"usd": TOL_USD, "kw": 0.01, "days": 0.01, "rps": 1e-3, "ms p99": 1e-2}


def check_limits(problem: Problem, catalog: Catalog, plan: Plan, m: Measured, errs: list[str]) -> None:
    """Every named limit holds on the recomputed quantities, and the plan's limits report
    states that very quantity (a report that contradicts its plan is a violation too)."""
    rows = {c.name: c for c in plan.constraints}
    for fam, lim in every_limit(problem, catalog):
        used, limit = fam.used(m, lim), row_limit(fam, lim, m)
        tol = USED_TOL.get(fam.unit, 1e-6)
        over = used + tol < limit if fam.at_least else used > limit + tol
        if over:
            sense = "<" if fam.at_least else ">"
            errs.append(f"{lim.name}: {used:,.3f} {fam.unit} {sense} {limit:,.3f} allowed")
        row = rows.get(lim.name)
        if row is None:
            errs.append(f"{lim.name}: missing from the plan's limits report")
        elif not math.isclose(row.used, used, rel_tol=REL, abs_tol=tol):
            errs.append(f"{lim.name}: the limits report says {row.used:,.3f} {fam.unit}, the plan holds {used:,.3f}")


def _close(a: float, b: float, tol: float = TOL_USD) -> bool:
    return abs(a - b) <= max(tol, REL * max(abs(a), abs(b)))


def _in_service(bought_year: int, op_year: int, life: int | None) -> bool:
    """A server bought in cash-flow year y runs operating years y+1 .. y+life."""
    return bought_year < op_year <= bought_year + (life or 10**6)


def _life(problem: Problem, plan: Plan) -> int | None:
    by_year = any(r.year is not None for r in plan.inference) or any(r.year for r in plan.servers)
    return problem.finance.hardware_lifetime_years if by_year else None


def _servers_and_money(problem: Problem, catalog: Catalog, plan: Plan, errs: list[str], m: Measured) -> None:
    from planner.pricing import decline_per_year

    site, fin = problem.site, problem.finance
    life = _life(problem, plan)
    years = range(1, problem.horizon_years + 1)
    racks = 0
    ports: dict[str, int] = defaultdict(int)
    server_w = dict.fromkeys(years, 0.0)
    pools: dict[tuple[str, str, str], list] = defaultdict(list)
    for row in plan.servers:
        pools[(row.server, row.gpu, row.fabric)].append(row)
    for (server, gpu_id, fid), rows in pools.items():
        chassis = catalog.servers[server]
        gpu = catalog.gpus[gpu_id]
        if gpu_id not in chassis.gpus:
            errs.append(f"server {server} cannot hold {gpu_id}")
        for row in (r for r in rows if not r.owned):  # owned rows (--keep) were paid before
            factor = (1 - decline_per_year(problem, catalog, gpu_id)) ** row.year
            price = round(chassis.base_price.usd + chassis.gpus_per_server * catalog.gpu_price_usd(gpu_id) * factor)
            if not _close(price, row.unit_price_usd):
                errs.append(f"{server}+{gpu_id} (year {row.year}): unit price {row.unit_price_usd} != catalog {price}")
        fabric = catalog.fabrics[fid]
        nics = chassis.scaleout_nics if fabric.kind != "none" else 0
        power = chassis.base_power_w + chassis.gpus_per_server * gpu.tdp_w + nics * fabric.nic_power_w
        installed = {k: sum(r.count for r in rows if _in_service(r.year, k, life)) for k in years}
        peak = max(installed.values())
        ports[fid] += nics * peak
        for k in years:
            server_w[k] += power * installed[k]
        fit = min(site.rack_units // chassis.rack_units, int(site.rack_power_kw * 1000 // power))
        pool_racks = sum(r.racks for r in rows)
        if fit < 1 or pool_racks < math.ceil(peak / fit):
            errs.append(
                f"{server}+{gpu_id}: {peak} servers need {math.ceil(peak / max(fit, 1))} racks, plan has {pool_racks}"
            )
        racks += pool_racks
        m.max_rack_kw = max(m.max_rack_kw, u.kw(min(peak, fit) * power))
        m.max_rack_units = max(m.max_rack_units, min(peak, fit) * chassis.rack_units)
        m.server_price_usd = max([m.server_price_usd, *(r.unit_price_usd for r in rows)])
        m.server_facility_kw = max(m.server_facility_kw, u.facility_kw(power, fin.pue))
        if gpu_id.lower() in {x.lower() for x in problem.catalog.exclude}:
            errs.append(f"{gpu_id} is excluded by the problem but bought")
    it_w = 0.0
    for net in plan.network:
        fabric = catalog.fabrics[net["fabric"]]
        if net["ports"] != ports[net["fabric"]]:
            errs.append(f"fabric {fabric.id}: {net['ports']} ports, servers have {ports[net['fabric']]} NICs")
        radix = fabric.switch_radix
        p = net["ports"]
        leaves_needed = 1 if p <= radix else math.ceil(p / (radix // 2))
        spines_needed = 0 if p <= radix else math.ceil(leaves_needed / 2)
        if net["leaves"] < leaves_needed or net["spines"] < spines_needed:
            errs.append(f"fabric {fabric.id}: {p} ports need {leaves_needed} leaves and {spines_needed} spines")
        switches = net["leaves"] + net["spines"]
        it_w += switches * fabric.switch_power_w
        racks += net["racks"]
        fit = min(site.rack_units // fabric.switch_rack_units, int(u.w(site.rack_power_kw) // fabric.switch_power_w))
        m.max_rack_kw = max(m.max_rack_kw, u.kw(min(switches, fit) * fabric.switch_power_w))
        m.max_rack_units = max(m.max_rack_units, min(switches, fit) * fabric.switch_rack_units)
    it_w += max(server_w.values(), default=0.0)
    missing = {f for f, n in ports.items() if n} - {n["fabric"] for n in plan.network}
    if missing:
        errs.append(f"servers on fabrics {sorted(missing)} but no network bought")
    if not _close(u.kw(it_w), plan.it_power_kw, 0.01):
        errs.append(f"IT power {plan.it_power_kw} kW != recomputed {u.kw(it_w):.3f} kW")
    if racks != plan.racks:
        errs.append(f"racks: plan says {plan.racks}, rows add to {racks}")
    total = sum(r.extended_price_usd for r in plan.purchase)
    for line in plan.purchase:
        if not _close(line.quantity * line.unit_price_usd, line.extended_price_usd):
            errs.append(f"purchase {line.sku}: {line.quantity} x {line.unit_price_usd} != {line.extended_price_usd}")
    if not _close(total, plan.capex_usd):
        errs.append(f"purchase list sums to {total}, capex is {plan.capex_usd}")
    m.capex_usd, m.facility_kw, m.racks = total, u.facility_kw(it_w, fin.pue), racks
    for r in plan.servers:  # stock is per purchase year
        bought = sum(x.count * x.gpus_per_server for x in plan.servers if x.gpu == r.gpu and x.year == r.year)
        m.gpus_in_busiest_year[r.gpu] = max(bought, m.gpus_in_busiest_year.get(r.gpu, 0))
    m.gpu_types = len({r.gpu for r in plan.servers if r.count})


def _gpu_usage(problem: Problem, catalog: Catalog, plan: Plan, errs: list[str]) -> None:
    """In every year, at every moment, the services' GPUs plus the running jobs' fit the
    servers in service that year."""
    life = _life(problem, plan)
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
            if rep.rented and rep.rent_usd_per_gpu_hour != catalog.rent_usd_per_gpu_hour(rep.gpu, pricing):
                errs.append(
                    f"service {svc.name}: {rep.gpu} rented at {rep.rent_usd_per_gpu_hour}, not the {pricing} price"
                )
    for k in range(1, problem.horizon_years + 1):
        have: dict[tuple[str, str, str], int] = defaultdict(int)
        for r in plan.servers:
            if _in_service(r.year, k, life):
                have[(r.server, r.gpu, r.fabric)] += r.count * r.gpus_per_server
        held: dict[tuple[str, str, str], int] = defaultdict(int)
        for svc in plan.inference:
            if svc.year in (None, k):
                for rep in svc.replicas:
                    if not rep.rented:
                        held[(rep.server, rep.gpu, "none")] += rep.count * rep.gpus_per_replica
        begin, end = 365.0 * (k - 1), 365.0 * k
        for key in set(held) | set(runs):
            # the busiest moment in the year is when some job starts, or the year's start
            moments = [begin] + [s for s, _, _, _ in runs[key] if begin <= s < end]
            peak = max(held[key] + sum(g for s, e, g, _ in runs[key] if s <= t < e - 1e-9) for t in moments)
            if peak > have.get(key, 0):
                errs.append(f"{'/'.join(key)}: year {k}: workloads need {peak} GPUs at once, plan has {have[key]}")


def _training(problem: Problem, plan: Plan, errs: list[str], m: Measured) -> None:
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
        m.job_end_day[job.name] = max(t.end_day, t.start_day + t.days)  # the deadline family checks it
        for dep in job.after:
            d = next((r for n, r in rows.items() if n.lower() == dep.lower()), None)
            if d and t.start_day + 1e-9 < d.end_day:
                errs.append(f"job {job.name} starts before {d.name} ends")


def _inference(problem: Problem, catalog: Catalog, plan: Plan, errs: list[str], m: Measured) -> None:
    """Each replica kind recomputed with the performance model (or the user's benchmark);
    the demand each year's replicas carry and their p99 latencies go to the limit checks."""
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
            if svc.mix is not None:
                latencies += _check_mix(svc, row, need * (1 + svc.min_spare_share), catalog, errs)
            for rep in [] if svc.mix is not None else row.replicas:
                why, p99 = (
                    _check_measured(svc, rep, catalog)
                    if rep.source == "measured"
                    else _check_modelled(svc, rep, catalog)
                )
                if why:
                    errs.append(f"service {svc.name}: {rep.gpu} x{rep.gpus_per_replica} {rep.precision}: {why}")
                latencies.append(p99)
            carried = carried_rps(row, svc.min_spare_share, svc.mix is not None)
            if svc.name not in m.carried_margin_rps or carried - need < m.carried_margin_rps[svc.name]:
                m.carried_rps[svc.name], m.carried_margin_rps[svc.name] = carried, carried - need
                m.required_rps[svc.name] = need
        m.ttft_p99_ms[svc.name] = max((ttft for ttft, _ in latencies), default=0.0)
        m.tpot_p99_ms[svc.name] = max((tpot for _, tpot in latencies), default=0.0)


def _year(row: InferenceRow) -> str:
    return "" if row.year is None else f" (year {row.year})"


def _check_mix(
    svc: InferenceService, row: InferenceRow, need: float, catalog: Catalog, errs: list[str]
) -> list[tuple[float, float]]:
    """Every bucket is fully routed, in whole slices, to kinds that meet its targets at its own
    sizes; each kind's replicas have the time for the traffic routed to them (plus the spares).
    Returns the recomputed p99 (TTFT, TPOT) of every route."""
    assert svc.mix is not None
    latencies: list[tuple[float, float]] = []
    busy = [0.0] * len(row.replicas)
    buckets = svc.mix.sized
    if [b.bucket for b in row.routing] != [b.label for b in buckets]:
        errs.append(f"service {svc.name}{_year(row)}: routing does not list the mix's buckets")
        return latencies
    for bucket, route in zip(buckets, row.routing, strict=True):
        total = sum(r.share for r in route.routes)
        if abs(total - 1) > 1e-9:
            errs.append(f"service {svc.name}{_year(row)}: bucket {bucket.label} routed {total:.4f} of its requests")
        for r in route.routes:
            slices = r.share * svc.mix.slices
            if abs(slices - round(slices)) > 1e-9:
                errs.append(f"service {svc.name}: bucket {bucket.label}: share {r.share} is not whole slices")
            rep = row.replicas[r.replica]
            rps, why, p99 = _bucket_capacity(svc, rep, bucket, catalog)
            if why:
                errs.append(f"service {svc.name}: bucket {bucket.label} on {rep.gpu} x{rep.gpus_per_replica}: {why}")
                continue
            latencies.append(p99)
            busy[r.replica] += need * bucket.share * r.share / rps
    for rep, load in zip(row.replicas, busy, strict=True):
        if load > rep.count + 1e-4:
            errs.append(f"service {svc.name}{_year(row)}: {rep.gpu} needs {load:.3f} replicas, plan has {rep.count}")
    if sum(r.count for r in row.replicas) + 1e-4 < sum(busy) + svc.spare_replicas:
        errs.append(f"service {svc.name}{_year(row)}: fewer than {svc.spare_replicas} spare replicas")
    return latencies


P99 = tuple[float, float]  # (TTFT, TPOT) at the p99, ms


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
    from planner.perf.links import link_for

    assert svc.model is not None
    if rep.precision not in svc.precisions:
        return None, "precision not allowed"
    gpu, chassis = catalog.gpus[rep.gpu], catalog.servers[rep.server]
    q = InferenceQuery(
        model=shape_of(svc.model, catalog),
        gpu=gpu,
        gpus=rep.gpus_per_replica,
        precision=rep.precision,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        link=link_for(chassis, gpu, rep.gpus_per_replica),
        concurrency=concurrency,
        tpot_ms=tpot_ms,
        ttft_ms=ttft_ms,
    )
    eff = catalog.efficiency
    est = estimate_inference(q, eff.generations[gpu.generation], eff.serving)
    if not est.fits:
        return None, f"does not fit: {est.reason}"
    return est, ""  # its p99 latencies are held to the targets by the limit checks


def _check_modelled(svc: InferenceService, rep: ReplicaRow, catalog: Catalog) -> tuple[str, P99]:
    """Recompute the replica at the service's mean sizes and the batch the plan claims."""
    if svc.model is None:
        return "a generic service has only measured replicas", (0.0, 0.0)
    est, why = _recompute(svc, rep, catalog, svc.input_tokens, svc.output_tokens, concurrency=rep.batch)
    if est is None:
        return why, (0.0, 0.0)
    p99 = (est.ttft_p99_ms, est.tpot_p99_ms)
    if rep.rps_per_replica > est.planning_requests_per_s + 1e-6:
        return f"claims {rep.rps_per_replica} rps > {est.planning_requests_per_s:.3f}", p99
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


def _finance(plan: Plan, errs: list[str]) -> None:
    pv = sum(c.present_value_usd for c in plan.cash_flows)
    if not _close(pv, plan.tco_usd):
        errs.append(f"cash flows sum to {pv:,.2f}, TCO is {plan.tco_usd:,.2f}")
    if not _close(sum(plan.tco_breakdown_usd.values()), plan.tco_usd):
        errs.append("TCO breakdown does not add up to the TCO")
