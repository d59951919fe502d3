"""Build the CP-SAT model from the options and the problem's limits.

Variables are integer counts per configuration (no per-server Booleans: no
symmetry). The builders here make the variables and the quantities (capex, power by year,
racks, capacity, job ends); the named limits on them come from the table in
``planner.limits``, each family adding its own constraint under its stable name.

Elastic limits: ``relax`` names limits that get a bounded non-negative slack
variable, so a diagnosis can ask "how far must this move?".
"""

from __future__ import annotations

import math
from collections.abc import Collection
from functools import partial

from ortools.sat.python import cp_model

from planner import units as u
from planner.bom import PoolKey, per_rack, pool_spec, servers_per_rack
from planner.catalog import Catalog
from planner.fabric import leaf_ports, max_ports, rails_of, single_switch_allowed
from planner.finance import Rates
from planner.frontend import storage_for
from planner.limits.table import every_limit
from planner.optimize.built import Built, Expr, FabricVars, PoolVars, upper
from planner.optimize.costs import objective, rent
from planner.optimize.disagg import kv_nic_limits
from planner.optimize.fleet_cuts import add_fleet_cuts, forced_fleet_cuts
from planner.optimize.floors import add_service_floors, start_service_floors
from planner.optimize.jobs import job_items, training
from planner.optimize.serving import serving
from planner.optimize.time_sharing import Item, ancestors, share, share_by_year
from planner.optimize.type_floors import a_fleet
from planner.options.types import WorkloadOptions
from planner.pricing import pool_pue, server_price_usd
from planner.schema.problem import InferenceService, Problem


def build(
    problem: Problem,
    catalog: Catalog,
    workloads: list[WorkloadOptions],
    relax: Collection[str] = (),
    kept: dict[PoolKey, tuple[int, int]] | None = None,
    into: cp_model.CpModel | None = None,
    pools: Collection[PoolKey] = (),
) -> Built:
    """``kept``: hardware already bought (``--keep``): it stays, its price is sunk, it still runs.

    ``into``: build inside this model and leave the objective to the caller (a two-stage model
    holds one build per scenario); ``pools``: pools to hold even if no option of this problem
    uses them (another scenario's, whose servers every scenario pays for)."""
    b = Built(into or cp_model.CpModel(), periods=problem.horizon_years if problem.yearly else 1, kept=dict(kept or {}))
    rates = Rates.of(problem)
    limits = every_limit(problem, catalog)
    for fam, lim in limits:  # elastic limits get a bounded slack a diagnosis can minimise
        if lim.name in relax:
            b.slacks[lim.name] = b.model.new_int_var(0, max(0, fam.slack_bound(lim)), f"slack[{lim.name}]")
    _pools(b, problem, catalog, workloads, relax, pools)
    training(b, problem, workloads)
    serving(b, problem, catalog, workloads, relax)
    # the floors price a replica for the whole horizon; solved beside the rest of the build
    floors = start_service_floors(b, problem, catalog, rates, relax) if b.periods == 1 else None
    kv_nic_limits(b, catalog)
    _gpu_use(b, problem)
    gpu_type_flags(b)
    b.gpu_vendor = {g: catalog.gpus[g].vendor for g in b.gpu_type_used}
    b.simplicity_tolerance = problem.policy.simplicity_tolerance
    _network(b, problem, catalog)
    _frontend(b, problem, catalog)
    _site(b, problem, catalog)
    for fam, lim in limits:  # the table of named limits: each family adds its own
        fam.add(b, problem, catalog, lim, b.slacks.get(lim.name, 0))
    b.tco = objective(b, problem, catalog, rates) + rent(b, problem, rates)
    if floors is not None:
        add_service_floors(b, floors)
        if a_fleet(b):
            add_fleet_cuts(b, problem, catalog, workloads, rates)
        else:
            b.later_cuts = partial(forced_fleet_cuts, b, problem, catalog, workloads, rates)
    if into is None:
        b.model.minimize(b.tco)
    return b


def _pools(
    b: Built,
    problem: Problem,
    catalog: Catalog,
    workloads: list[WorkloadOptions],
    relax: Collection[str],
    extra: Collection[PoolKey] = (),
) -> None:
    from planner.options.pools import pool_limit

    owned = [
        o for w in workloads for group in (w.training, w.inference) for o in group if o.rent_usd_per_gpu_hour is None
    ]
    keys = sorted({o.pool for o in owned} | set(b.kept) | set(extra)) if problem.finance.buy or b.kept else []
    site = problem.site
    m = b.model
    life = problem.finance.hardware_lifetime_years or b.periods
    for key in keys:
        spec = pool_spec(catalog, key)
        limit, _ = pool_limit(problem, catalog, key, ignore=relax)
        have, have_racks = b.kept.get(key, (0, 0))
        limit = max(limit, have)
        fit = servers_per_rack(spec, site)
        n = m.new_int_var(0, limit, f"servers[{key.label()}]")
        r = m.new_int_var(0, 0 if fit is None else math.ceil(limit / fit), f"racks[{key.label()}]")
        if fit is not None:  # homogeneous racks: each holds `fit` servers of this pool (units, power)
            m.add(r * fit >= n).with_name(f"racks_for[{key.label()}]")
        pv = PoolVars(spec, n, r, fit or 0)
        if have:
            # Owned servers stay (and run) from year 0; only purchases beyond them cost capex.
            m.add(n >= have).with_name(f"kept[{key.label()}]")
            m.add(r >= min(have_racks, upper(r)))
        if b.periods == 1:
            pv.bought, pv.installed = [n], [n]
        else:
            # Bought at the start of a year, in service for `life` years; the peak sizes racks and network.
            pv.bought = [m.new_int_var(0, limit, f"bought[{key.label()}@{y}]") for y in range(b.periods)]
            m.add(pv.bought[0] >= have)
            for y in range(b.periods):
                pv.installed.append(sum(pv.bought[max(0, y - life + 1) : y + 1]))
                m.add(n >= pv.installed[y])
        b.pools[key] = pv


def _gpu_use(b: Built, problem: Problem) -> None:
    """GPUs per pool: services hold theirs for the whole year (or from their start to their
    end, when they have one); training jobs hold theirs only while they run, so workloads
    that do not overlap in time share a pool (planner.optimize.time_sharing)."""
    periods = range(b.periods)
    serve: dict[PoolKey, list[list[Expr]]] = {k: [[] for _ in periods] for k in b.pools}
    items: dict[PoolKey, list[Item]] = {k: [] for k in b.pools}
    for key, jobs in job_items(b, problem).items():
        items[key].extend(jobs)
    waits = ancestors(problem)
    services = {s.name: s for s in problem.inference}
    for name, rs in b.serve.items():
        svc = services[name]
        held: dict[PoolKey, Expr] = {}
        for rep, per_year in rs:
            if rep.rent_usd_per_gpu_hour is not None:
                continue
            if svc.windowed:  # single-period plans only (the problem refuses windows by year)
                held[rep.pool] = held.get(rep.pool, 0) + rep.gpus_per_replica * per_year[0]
                continue
            for y in periods:
                serve[rep.pool][y].append(rep.gpus_per_replica * per_year[y])
        if held:
            window, first, last = _service_window(b, problem, svc)
            key_name = f"service:{name}"
            waits[key_name.lower()] = {d.lower() for d in svc.after} | {
                a for d in svc.after for a in waits.get(d.lower(), set())
            }
            for key, gpus in held.items():
                items[key].append(Item(key_name, gpus, first, last, window=window))
    m = b.model
    for key, p in b.pools.items():
        # Sizes are powers of two dividing the server's GPU count, so a total that
        # fits the GPUs always packs into whole servers.
        gps = p.spec.gpus_per_server
        if not items[key]:
            for y in periods:
                m.add(sum(serve[key][y]) <= gps * p.installed[y]).with_name(f"gpus[{key.label()}@{y}]")
            continue
        # A cumulative's capacity must be one variable (cpsat-notes): the GPUs services leave free.
        most = gps * upper(p.servers)
        free = m.new_int_var(0, most, f"free_gpus[{key.label()}]")
        b.free_gpus[key] = free
        if b.periods == 1:
            m.add(free == gps * p.servers - sum(serve[key][0])).with_name(f"gpus[{key.label()}]")
            share(m, free, items[key], waits, key.label())
            continue
        spare = [gps * p.installed[y] - sum(serve[key][y]) for y in periods]
        for y, free_in_year in enumerate(spare):
            m.add(free_in_year >= 0).with_name(f"gpus[{key.label()}@{y}]")
        share_by_year(m, free, items[key], spare, key.label())


def _service_window(b: Built, problem: Problem, svc: InferenceService) -> tuple[cp_model.IntervalVar, int, int]:
    """When a service holds its GPUs: from ``start_day`` (or, with ``after``, the moment its
    last job ends: no later, the model is needed then) to ``end_day`` or the horizon's end.
    Also its earliest start and its end, in model time units."""
    m = b.model
    end = u.days_up(svc.end_day) if svc.end_day is not None else u.days_up(problem.horizon_years * 365)
    first = u.days_down(svc.start_day or 0.0)
    if svc.name in b.service_windows:
        return b.service_windows[svc.name], first, end
    if not svc.after:
        window = m.new_fixed_size_interval_var(first, max(0, end - first), f"serve[{svc.name}]")
        b.service_starts[svc.name] = first
    else:
        jobs = {j.lower(): j for j in b.starts}
        start = m.new_int_var(first, end, f"serve_start[{svc.name}]")
        ends = [b.starts[jobs[d.lower()]] + b.durations[jobs[d.lower()]] for d in svc.after]
        m.add_max_equality(start, [first, *ends]).with_name(f"service:{svc.name}:after")
        window = m.new_interval_var(start, end - start, end, f"serve[{svc.name}]")
        b.service_starts[svc.name] = start
    b.service_windows[svc.name] = window
    return window, first, end


def gpu_type_flags(b: Built) -> None:
    """One literal per owned GPU type: true exactly when some pool of that GPU has a server
    (what the type-count limit, the per-type operations cost and the tie-breaks count)."""
    m = b.model
    by_gpu: dict[str, list[cp_model.IntVar]] = {}
    for key, p in b.pools.items():
        by_gpu.setdefault(key.gpu, []).append(p.servers)
    for gpu, servers in sorted(by_gpu.items()):
        flag = m.new_bool_var(f"gpu_type_used[{gpu}]")
        for n in servers:
            m.add(n <= upper(n) * flag)
        m.add(sum(servers) >= 1).only_enforce_if(flag)
        b.gpu_type_used[gpu] = flag


def _network(b: Built, problem: Problem, catalog: Catalog) -> None:
    """Each fabric's leaves, spines and uplinks for its servers' NIC ports, in its topology:
    the rules of ``planner.fabric``, which ``network_for`` computes in closed form."""
    m = b.model
    site = problem.site
    for fid in sorted({k.fabric for k in b.pools}):
        fabric = catalog.fabrics[fid]
        if fabric.kind == "none":
            continue
        members = [p for k, p in b.pools.items() if k.fabric == fid]
        ports = sum(p.spec.nics_per_server * p.servers for p in members)
        r = fabric.switch_radix
        down, up = leaf_ports(fabric)
        cap = max_ports(fabric)
        m.add(ports <= cap).with_name(f"fabric:{fid}:ports")
        # the leaves: enough down ports for every NIC (on a rail-optimised fabric, per rail)
        if fabric.topology == "rail-optimised":
            by_rail = _rail_leaves(b, fid, down, members)
            leaves = m.new_int_var(0, min(r, sum(upper(v) for v in by_rail)), f"leaves[{fid}]")
            m.add(leaves == sum(by_rail))
            m.add(leaves <= r).with_name(f"fabric:{fid}:leaves")
        else:
            most = sum(p.spec.nics_per_server * upper(p.servers) for p in members)
            leaves = m.new_int_var(0, max(1, math.ceil(min(cap, most) / down)), f"leaves[{fid}]")
        spines = m.new_int_var(0, max(1, math.ceil(up * upper(leaves) / r)), f"spines[{fid}]")
        uplinks = m.new_int_var(0, up * upper(leaves), f"uplinks[{fid}]")
        two_tier: list[cp_model.IntVar] = []  # when the two-tier rules hold: always, but on the fat tree
        if single_switch_allowed(fabric):  # the fat tree: one switch while the ports fit
            flag = m.new_bool_var(f"two_tier[{fid}]")
            two_tier = [flag]
            m.add(leaves * r >= ports)
            m.add(ports <= r).only_enforce_if(~flag)
            m.add(spines == 0).only_enforce_if(~flag)
            m.add(uplinks == 0).only_enforce_if(~flag)
        if fabric.topology != "rail-optimised":
            m.add(leaves * down >= ports).only_enforce_if(two_tier)
        m.add(uplinks == up * leaves).only_enforce_if(two_tier)  # a leaf's uplinks are cabled whole
        m.add(spines * r >= uplinks).only_enforce_if(two_tier)
        fit = max(1, per_rack(fabric.switch_rack_units, fabric.switch_power_w, site.rack_units, site.rack_power_kw))
        racks = m.new_int_var(0, math.ceil((upper(leaves) + upper(spines)) / fit), f"net_racks[{fid}]")
        m.add(racks * fit >= leaves + spines).with_name(f"racks_for[{fid}]")
        b.fabrics[fid] = FabricVars(fabric, ports, leaves, spines, uplinks, racks, fit)


def _rail_leaves(b: Built, fid: str, down: int, members: list[PoolVars]) -> list[cp_model.IntVar]:
    """Leaves per rail of a rail-optimised fabric: rail ``j`` takes every server's ``j``-th
    NIC port (``fabric.rail_ports``), and its own leaves hold them."""
    m = b.model
    shapes = [(rails_of(p.spec.chassis), p) for p in members]
    out = []
    for j in range(max(rails for (rails, _), _ in shapes)):
        on_rail = [(per_rail, p) for (rails, per_rail), p in shapes if rails > j]
        load = sum(per_rail * p.servers for per_rail, p in on_rail)
        most = sum(per_rail * upper(p.servers) for per_rail, p in on_rail)
        leaves = m.new_int_var(0, math.ceil(most / down), f"rail_leaves[{fid}#{j}]")
        m.add(leaves * down >= load)
        out.append(leaves)
    return out


def _frontend(b: Built, problem: Problem, catalog: Catalog) -> None:
    """Front-end and management switches for every racked server (and the storage nodes),
    and the storage the jobs need (planner.frontend)."""
    f = catalog.frontend
    m = b.model
    store = storage_for(problem, catalog)
    b.storage_tb, b.storage_ports = store.tb, store.ports
    racked = [p for p in b.pools.values() if p.spec.chassis.needs_rack]
    servers: Expr = sum(p.servers for p in racked)
    most = sum(upper(p.servers) for p in racked)
    # storage is bought for a cluster (some racked server): a desk-side box keeps its data on its disks
    cluster: Expr = 0
    if store.tb and racked:
        cluster = m.new_bool_var("storage_bought")
        m.add(servers <= most * cluster)
        m.add(servers >= cluster)
    b.storage_on = cluster
    hi = math.ceil((most * f.ports_per_server + store.ports) / f.switch_ports)
    switches = m.new_int_var(0, hi, "frontend_switches")
    m.add(switches * f.switch_ports >= servers * f.ports_per_server + store.ports * cluster).with_name("frontend:ports")
    mgmt = m.new_int_var(0, math.ceil((most + hi) / f.mgmt_switch_ports), "mgmt_switches")
    m.add(mgmt * f.mgmt_switch_ports >= servers + switches).with_name("frontend:mgmt_ports")
    b.frontend = (switches, mgmt, servers)


def _site(b: Built, problem: Problem, catalog: Catalog) -> None:
    """The quantities site and money limits bound: capex, IT and facility power by year, racks."""
    rack_price = u.usd(catalog.rack.price.usd)
    capex: Expr = 0
    power: Expr = 0
    racks: Expr = 0
    for p in b.pools.values():
        for y, bought in enumerate(p.bought):
            capex += u.usd(server_price_usd(p.spec, catalog, problem, y)) * bought
            capex += u.usd(p.spec.nic_price_usd) * p.spec.nics_per_server * bought
            capex += u.usd(p.spec.cooling_price_usd) * bought
        racks += p.racks
    by_year = [sum(u.watts_up(p.spec.power_w) * p.installed[y] for p in b.pools.values()) for y in range(b.periods)]
    air = u.pue_milli(problem.finance.pue)
    facility = [
        sum(
            u.pue_milli(pool_pue(p.spec, catalog, problem)) * u.watts_up(p.spec.power_w) * p.installed[y]
            for p in b.pools.values()
        )
        for y in range(b.periods)
    ]
    for f in b.fabrics.values():
        fab = f.fabric
        assert fab.switch_price and fab.cable_price
        capex += u.usd(fab.switch_price.usd) * (f.leaves + f.spines)
        capex += u.usd(fab.cable_price.usd) * (f.ports + f.uplinks)
        power += u.watts_up(fab.switch_power_w) * (f.leaves + f.spines)
        racks += f.racks
    fe, st = catalog.frontend, catalog.storage
    switches, mgmt, racked = b.frontend
    capex += u.usd(fe.switch_price.usd) * switches + u.usd(fe.mgmt_switch_price.usd) * mgmt
    capex += u.usd(fe.cable_price.usd) * (racked * fe.ports_per_server + b.storage_ports * b.storage_on)
    capex += u.usd(st.price_usd_per_tb.usd) * b.storage_tb * b.storage_on
    power += u.watts_up(fe.switch_power_w) * switches + u.watts_up(fe.mgmt_switch_power_w) * mgmt
    power += u.watts_up(st.power_w_per_tb * b.storage_tb) * b.storage_on
    paid: Expr = racks
    existing = problem.site.existing_racks
    if existing:  # the site's own racks cost nothing
        most = sum(upper(p.racks) for p in b.pools.values()) + sum(upper(f.racks) for f in b.fabrics.values())
        paid = b.model.new_int_var(0, max(0, most - existing), "paid_racks")
        b.model.add(paid >= racks - existing)
    capex += rack_price * paid
    for key, (have, have_racks) in b.kept.items():  # sunk: bought before this plan
        spec = b.pools[key].spec
        capex -= (u.usd(spec.server_price_usd) + u.usd(spec.nic_price_usd) * spec.nics_per_server) * have
        capex -= u.usd(spec.cooling_price_usd) * have
        capex -= rack_price * have_racks
    peak = sum(u.watts_up(p.spec.power_w) * p.servers for p in b.pools.values())
    b.capex, b.it_power_w, b.total_racks, b.paid_racks = capex, power + peak, racks, paid
    b.it_power_w_by_year = [power + servers_w for servers_w in by_year]
    b.facility_w_by_year = [air * power + servers_w for servers_w in facility]
