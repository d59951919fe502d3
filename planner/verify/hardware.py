"""Hardware and money: prices, power, racks, network, capex recomputed from the rows, the
purchase list, and GPUs held at every moment of every year."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

from planner import units as u
from planner.catalog import Catalog
from planner.fabric import fits, network_for, rail_ports
from planner.frontend import StoragePlan, frontend_switches, storage_for
from planner.limits.base import Measured
from planner.pricing import decline_per_year
from planner.schema.catalog import ServerChassis
from planner.schema.plan import Plan, ServerRow
from planner.schema.problem import Problem
from planner.verify.common import close, in_service, life_of

PoolId = tuple[str, str, str]  # (chassis, GPU, fabric)


@dataclass
class _Tally:
    """What the server and network rows add up to, recomputed from the catalog."""

    racks: int = 0
    capex_usd: float = 0.0
    ports: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    servers: dict[str, list[tuple[ServerChassis, int]]] = field(default_factory=lambda: defaultdict(list))
    server_w: dict[int, float] = field(default_factory=dict)  # per operating year
    facility_w: dict[int, float] = field(default_factory=dict)  # servers' power x their PUE, per year
    life: int | None = None  # years a server runs (plans by year)
    racked: int = 0  # racked servers (the peak of each pool): each gets front-end links


def check_hardware(problem: Problem, catalog: Catalog, plan: Plan, errs: list[str], m: Measured) -> None:
    """Server prices, rack fit, network size, power, racks and capex, each recomputed; the
    limits' quantities (capex, power, racks, the fullest rack, stock, GPU types) into ``m``."""
    years = range(1, problem.horizon_years + 1)
    tally = _Tally(
        server_w=dict.fromkeys(years, 0.0), facility_w=dict.fromkeys(years, 0.0), life=life_of(problem, plan)
    )
    pools: dict[PoolId, list[ServerRow]] = defaultdict(list)
    for row in plan.servers:
        pools[(row.server, row.gpu, row.fabric)].append(row)
    for pool, rows in pools.items():
        _check_pool(problem, catalog, pool, rows, errs, m, tally)
    switch_w = _check_network(problem, catalog, plan, errs, m, tally)
    switch_w += _check_frontend(problem, catalog, plan, errs, tally)
    it_w = switch_w + max(tally.server_w.values(), default=0.0)
    if not close(u.kw(it_w), plan.it_power_kw, 0.01):
        errs.append(f"IT power {plan.it_power_kw} kW != recomputed {u.kw(it_w):.3f} kW")
    if tally.racks != plan.racks:
        errs.append(f"racks: plan says {plan.racks}, rows add to {tally.racks}")
    owned_racks = sum(r.racks for r in plan.servers if r.owned)
    existing = min(problem.site.existing_racks, tally.racks - owned_racks)  # the site's: free
    tally.capex_usd += (tally.racks - owned_racks - existing) * round(catalog.rack.price.usd)
    _check_purchase(plan, tally.capex_usd, errs)
    facility_w = switch_w * problem.finance.pue + max(tally.facility_w.values(), default=0.0)
    m.capex_usd, m.facility_kw, m.racks = tally.capex_usd, u.kw(facility_w), tally.racks
    for r in plan.servers:  # stock is per purchase year
        bought = sum(x.count * x.gpus_per_server for x in plan.servers if x.gpu == r.gpu and x.year == r.year)
        m.gpus_in_busiest_year[r.gpu] = max(bought, m.gpus_in_busiest_year.get(r.gpu, 0))
    m.gpu_types = len({r.gpu for r in plan.servers if r.count})


def _check_pool(
    problem: Problem,
    catalog: Catalog,
    pool: PoolId,
    rows: list[ServerRow],
    errs: list[str],
    m: Measured,
    tally: _Tally,
) -> None:
    server, gpu_id, fid = pool
    if server not in catalog.servers or gpu_id not in catalog.gpus or fid not in catalog.fabrics:
        errs.append(f"{server}+{gpu_id} on {fid}: not in the catalog this problem may buy from (excluded?)")
        return
    site, fin = problem.site, problem.finance
    chassis, gpu, fabric = catalog.servers[server], catalog.gpus[gpu_id], catalog.fabrics[fid]
    if gpu_id not in chassis.gpus:
        errs.append(f"server {server} cannot hold {gpu_id}")
    if not fin.buy and any(not r.owned for r in rows):
        errs.append(f"{server}+{gpu_id}: bought, but the problem only rents (finance.buy: false)")
    nics = chassis.scaleout_nics if fabric.kind != "none" else 0
    for row in (r for r in rows if not r.owned):  # owned rows (--keep) were paid before
        factor = (1 - decline_per_year(problem, catalog, gpu_id)) ** row.year
        price = round(chassis.base_price.usd + chassis.gpus_per_server * catalog.gpu_price_usd(gpu_id) * factor)
        if not close(price, row.unit_price_usd):
            errs.append(f"{server}+{gpu_id} (year {row.year}): unit price {row.unit_price_usd} != catalog {price}")
        nic_usd = fabric.nic_price.usd if fabric.nic_price and nics else 0.0
        tally.capex_usd += row.count * (price + nics * nic_usd)
    power = chassis.base_power_w + chassis.gpus_per_server * gpu.tdp_w + nics * fabric.nic_power_w
    liquid = chassis.cooling == "liquid"
    if liquid:
        if site.cooling == "air":
            errs.append(f"{server}: liquid-cooled, but site.cooling is air")
        per_kw = catalog.liquid_cooling.price_usd_per_kw.usd
        tally.capex_usd += sum(r.count for r in rows if not r.owned) * round(u.kw(power) * per_kw)
    pue = (site.liquid_pue or catalog.liquid_cooling.pue) if liquid else fin.pue
    installed = {k: sum(r.count for r in rows if in_service(r.year, k, tally.life)) for k in tally.server_w}
    peak = max(installed.values())
    tally.ports[fid] += nics * peak
    if nics:
        tally.servers[fid].append((chassis, peak))
    for k in tally.server_w:
        tally.server_w[k] += power * installed[k]
        tally.facility_w[k] += power * pue * installed[k]
    pool_racks = sum(r.racks for r in rows)
    tally.racks += pool_racks
    tally.racked += peak if chassis.needs_rack else 0
    if not chassis.needs_rack:  # a desk-side or edge chassis: no rack, no rack limits
        if pool_racks:
            errs.append(f"{server}+{gpu_id}: stands outside racks, plan gives it {pool_racks}")
    else:
        # an air-cooled rack holds no more than air can shed
        cap_kw = site.rack_power_kw if liquid else min(site.rack_power_kw, site.air_rack_power_kw)
        fit = min(site.rack_units // chassis.rack_units, int(u.w(cap_kw) // power))
        if fit < 1 or pool_racks < math.ceil(peak / fit):
            need = math.ceil(peak / max(fit, 1))
            errs.append(f"{server}+{gpu_id}: {peak} servers need {need} racks, plan has {pool_racks}")
        m.max_rack_kw = max(m.max_rack_kw, u.kw(min(peak, fit) * power))
        if not liquid:
            m.extra["max_air_rack_kw"] = max(m.extra.get("max_air_rack_kw", 0.0), u.kw(min(peak, fit) * power))
        m.max_rack_units = max(m.max_rack_units, min(peak, fit) * chassis.rack_units)
    m.server_price_usd = max([m.server_price_usd, *(r.unit_price_usd for r in rows)])
    m.server_facility_kw = max(m.server_facility_kw, u.facility_kw(power, fin.pue))
    if gpu_id.lower() in {x.lower() for x in problem.catalog.exclude}:
        errs.append(f"{gpu_id} is excluded by the problem but bought")


def _check_network(
    problem: Problem, catalog: Catalog, plan: Plan, errs: list[str], m: Measured, tally: _Tally
) -> float:
    """Each fabric's switches for its servers' ports; returns the switches' watts."""
    site = problem.site
    switch_w = 0.0
    for net in plan.network:
        if net["fabric"] not in catalog.fabrics:
            errs.append(f"fabric {net['fabric']}: not in the catalog")
            continue
        fabric = catalog.fabrics[net["fabric"]]
        if net["ports"] != tally.ports[net["fabric"]]:
            errs.append(f"fabric {fabric.id}: {net['ports']} ports, servers have {tally.ports[net['fabric']]} NICs")
        p = net["ports"]
        if fabric.kind != "none" and p == tally.ports[fabric.id]:
            if not all(fits(fabric, chassis) for chassis, _ in tally.servers[fabric.id]):
                errs.append(f"fabric {fabric.id}: a server with fewer than two NIC rails on a rail-optimised fabric")
            need = network_for(fabric, p, rail_ports(tally.servers[fabric.id]))
            topology = fabric.topology_name or fabric.topology
            if net["leaves"] < need.leaves or net["spines"] < need.spines or net["cables"] < need.cables:
                errs.append(
                    f"fabric {fabric.id}: {p} ports need {need.leaves} leaves and {need.spines} spines "
                    f"and {need.cables} cables ({topology}); the plan has {net['leaves']}, {net['spines']} "
                    f"and {net['cables']}"
                )
            if need.leaves > fabric.switch_radix:
                errs.append(f"fabric {fabric.id}: {need.leaves} leaves are beyond two tiers of {fabric.switch_radix}")
        switches = net["leaves"] + net["spines"]
        switch_w += switches * fabric.switch_power_w
        tally.racks += net["racks"]
        if fabric.switch_price and fabric.cable_price:
            tally.capex_usd += switches * round(fabric.switch_price.usd) + net["cables"] * round(fabric.cable_price.usd)
        air_kw = min(site.rack_power_kw, site.air_rack_power_kw)  # switches are air-cooled
        fit = min(site.rack_units // fabric.switch_rack_units, int(u.w(air_kw) // fabric.switch_power_w))
        m.max_rack_kw = max(m.max_rack_kw, u.kw(min(switches, fit) * fabric.switch_power_w))
        in_one = u.kw(min(switches, fit) * fabric.switch_power_w)
        m.extra["max_air_rack_kw"] = max(m.extra.get("max_air_rack_kw", 0.0), in_one)
        m.max_rack_units = max(m.max_rack_units, min(switches, fit) * fabric.switch_rack_units)
    missing = {f for f, n in tally.ports.items() if n} - {n["fabric"] for n in plan.network}
    if missing:
        errs.append(f"servers on fabrics {sorted(missing)} but no network bought")
    return switch_w


def _check_frontend(problem: Problem, catalog: Catalog, plan: Plan, errs: list[str], tally: _Tally) -> float:
    """Front-end and management switches for the racked servers and storage nodes, and the
    jobs' storage, recomputed (planner.frontend's rules); returns their watts."""
    fe, st = catalog.frontend, catalog.storage
    store = storage_for(problem, catalog)
    if not tally.racked:  # no cluster: no shared storage
        store = StoragePlan(0, 0, 0)
    if plan.storage_tb != store.tb:
        errs.append(f"storage: plan has {plan.storage_tb} TB, the jobs need {store.tb} TB")
    need_switches, need_mgmt = frontend_switches(tally.racked, store.ports, catalog)
    got = plan.frontend or {}
    switches, mgmt = got.get("switches", 0), got.get("mgmt_switches", 0)
    links = tally.racked * fe.ports_per_server + store.ports
    if switches < need_switches or mgmt < need_mgmt or got.get("ports", 0) != links:
        errs.append(
            f"front-end network: {tally.racked} racked servers and {store.nodes} storage nodes need {links} links, "
            f"{need_switches} switches and {need_mgmt} management switches; plan has {got}"
        )
    tally.capex_usd += switches * round(fe.switch_price.usd) + mgmt * round(fe.mgmt_switch_price.usd)
    tally.capex_usd += got.get("ports", 0) * round(fe.cable_price.usd) + plan.storage_tb * round(
        st.price_usd_per_tb.usd
    )
    return switches * fe.switch_power_w + mgmt * fe.mgmt_switch_power_w + plan.storage_tb * st.power_w_per_tb


def _check_purchase(plan: Plan, capex_usd: float, errs: list[str]) -> None:
    """The purchase list, its lines and the plan's capex all agree with what the rows cost."""
    total = sum(r.extended_price_usd for r in plan.purchase)
    for line in plan.purchase:
        if not close(line.quantity * line.unit_price_usd, line.extended_price_usd):
            errs.append(f"purchase {line.sku}: {line.quantity} x {line.unit_price_usd} != {line.extended_price_usd}")
    if not close(total, plan.capex_usd):
        errs.append(f"purchase list sums to {total}, capex is {plan.capex_usd}")
    if not close(capex_usd, plan.capex_usd):
        errs.append(f"capex: plan says {plan.capex_usd:,.2f}, its servers, network and racks cost {capex_usd:,.2f}")


def check_gpu_usage(problem: Problem, catalog: Catalog, plan: Plan, errs: list[str]) -> None:
    """In every year, at every moment, the services' GPUs plus the running jobs' (with their
    hot spares) fit the servers in service that year; rented GPUs at the catalog's price, only when renting is on."""
    life = life_of(problem, plan)
    runs: dict[PoolId, list[tuple[float, float, int, str]]] = defaultdict(list)
    pricing = problem.finance.rent
    for t in plan.training:
        if t.rented:  # a cloud's GPUs, at the on-demand price
            if pricing == "none":
                errs.append(f"job {t.name}: rented, but the problem rents nothing (finance.rent: none)")
            elif t.rent_usd_per_gpu_hour != catalog.rent_usd_per_gpu_hour(t.gpu, "on_demand"):
                errs.append(f"job {t.name}: rented at {t.rent_usd_per_gpu_hour}, not the catalog's on-demand price")
            continue
        if t.server not in catalog.servers:
            errs.append(f"job {t.name}: server {t.server} is not in the catalog")
            continue
        per = catalog.servers[t.server].gpus_per_server
        if t.gpus > per and t.fabric == "none":
            errs.append(f"job {t.name}: {t.gpus} GPUs span servers without a fabric")
        # hot spares are the job's: held in its pool for its days, beside its own GPUs
        runs[(t.server, t.gpu, t.fabric)].append((t.start_day, t.end_day, t.held_gpus, t.name))
    for svc in plan.inference:
        if svc.start_day is not None:  # a windowed service holds its GPUs like a job, from start to end
            for rep in (r for r in svc.replicas if not r.rented):
                end = svc.end_day if svc.end_day is not None else 365.0 * problem.horizon_years
                runs[(rep.server, rep.gpu, rep.fabric)].append(
                    (svc.start_day, end, rep.count * rep.gpus_per_replica, f"service {svc.name}")
                )
        for rep in (r for r in svc.replicas if r.rented):
            if pricing == "none":
                errs.append(f"service {svc.name}: {rep.gpu} rented, but the problem rents nothing (finance.rent: none)")
            elif rep.rent_usd_per_gpu_hour != catalog.rent_usd_per_gpu_hour(rep.gpu, pricing):
                errs.append(
                    f"service {svc.name}: {rep.gpu} rented at {rep.rent_usd_per_gpu_hour}, not the {pricing} price"
                )
    for k in range(1, problem.horizon_years + 1):
        _check_year(plan, k, life, runs, errs)
    _check_windows(problem, plan, errs)


def _check_windows(problem: Problem, plan: Plan, errs: list[str]) -> None:
    """A service with a window starts on its start_day, or when the last job it waits for ends
    (not before: its model does not exist yet; not after: it is needed then), and ends on its day."""
    ends = {t.name.lower(): t.end_day for t in plan.training}
    rows = {r.name: r for r in plan.inference}
    for svc in problem.inference:
        row = rows.get(svc.name)
        if row is None or not svc.windowed:
            continue
        if row.start_day is None:
            errs.append(f"service {svc.name}: its window is not in the plan")
            continue
        start = max([svc.start_day or 0.0, *(ends.get(d.lower(), math.inf) for d in svc.after)])
        if abs(row.start_day - start) > 0.011:  # the model's time grain is 1/100 day
            errs.append(f"service {svc.name}: starts on day {row.start_day:g}, should on day {start:g}")
        end = svc.end_day if svc.end_day is not None else 365.0 * problem.horizon_years
        if row.end_day is None or abs(row.end_day - end) > 0.011:
            errs.append(f"service {svc.name}: ends on day {row.end_day}, should on day {end:g}")


def _check_year(
    plan: Plan, k: int, life: int | None, runs: dict[PoolId, list[tuple[float, float, int, str]]], errs: list[str]
) -> None:
    have: dict[PoolId, int] = defaultdict(int)
    for r in plan.servers:
        if in_service(r.year, k, life):
            have[(r.server, r.gpu, r.fabric)] += r.count * r.gpus_per_server
    held: dict[PoolId, int] = defaultdict(int)
    for svc in plan.inference:
        if svc.year in (None, k) and svc.start_day is None:
            for rep in svc.replicas:
                if not rep.rented:
                    held[(rep.server, rep.gpu, rep.fabric)] += rep.count * rep.gpus_per_replica
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
    capex = sum(c.capex_usd for c in plan.cash_flows)
    if not close(capex, plan.capex_usd):
        errs.append(f"cash flows carry {capex:,.2f} of capex, the plan {plan.capex_usd:,.2f}")
