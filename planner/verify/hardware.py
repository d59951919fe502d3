"""Hardware and money: prices, power, racks, network, the purchase list, and GPUs held at every
moment of every year."""

from __future__ import annotations

import math
from collections import defaultdict

from planner import units as u
from planner.catalog import Catalog
from planner.limits.base import Measured
from planner.schema.plan import Plan
from planner.schema.problem import Problem
from planner.verify.common import close, in_service, life_of


def check_hardware(problem: Problem, catalog: Catalog, plan: Plan, errs: list[str], m: Measured) -> None:
    from planner.pricing import decline_per_year

    site, fin = problem.site, problem.finance
    life = life_of(problem, plan)
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
            if not close(price, row.unit_price_usd):
                errs.append(f"{server}+{gpu_id} (year {row.year}): unit price {row.unit_price_usd} != catalog {price}")
        fabric = catalog.fabrics[fid]
        nics = chassis.scaleout_nics if fabric.kind != "none" else 0
        power = chassis.base_power_w + chassis.gpus_per_server * gpu.tdp_w + nics * fabric.nic_power_w
        installed = {k: sum(r.count for r in rows if in_service(r.year, k, life)) for k in years}
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
    if not close(u.kw(it_w), plan.it_power_kw, 0.01):
        errs.append(f"IT power {plan.it_power_kw} kW != recomputed {u.kw(it_w):.3f} kW")
    if racks != plan.racks:
        errs.append(f"racks: plan says {plan.racks}, rows add to {racks}")
    total = sum(r.extended_price_usd for r in plan.purchase)
    for line in plan.purchase:
        if not close(line.quantity * line.unit_price_usd, line.extended_price_usd):
            errs.append(f"purchase {line.sku}: {line.quantity} x {line.unit_price_usd} != {line.extended_price_usd}")
    if not close(total, plan.capex_usd):
        errs.append(f"purchase list sums to {total}, capex is {plan.capex_usd}")
    m.capex_usd, m.facility_kw, m.racks = total, u.facility_kw(it_w, fin.pue), racks
    for r in plan.servers:  # stock is per purchase year
        bought = sum(x.count * x.gpus_per_server for x in plan.servers if x.gpu == r.gpu and x.year == r.year)
        m.gpus_in_busiest_year[r.gpu] = max(bought, m.gpus_in_busiest_year.get(r.gpu, 0))
    m.gpu_types = len({r.gpu for r in plan.servers if r.count})


def check_gpu_usage(problem: Problem, catalog: Catalog, plan: Plan, errs: list[str]) -> None:
    """In every year, at every moment, the services' GPUs plus the running jobs' fit the
    servers in service that year."""
    life = life_of(problem, plan)
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
            if in_service(r.year, k, life):
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


def check_finance(plan: Plan, errs: list[str]) -> None:
    pv = sum(c.present_value_usd for c in plan.cash_flows)
    if not close(pv, plan.tco_usd):
        errs.append(f"cash flows sum to {pv:,.2f}, TCO is {plan.tco_usd:,.2f}")
    if not close(sum(plan.tco_breakdown_usd.values()), plan.tco_usd):
        errs.append("TCO breakdown does not add up to the TCO")
