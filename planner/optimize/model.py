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
from dataclasses import dataclass, field
from typing import TypeAlias

from ortools.sat.python import cp_model

from planner import units as u
from planner.bom import PoolKey, PoolSpec, max_ports, per_rack, pool_spec
from planner.catalog import Catalog
from planner.finance import Rates
from planner.limits.table import every_limit
from planner.options.types import InferenceOption, TrainingOption, WorkloadOptions
from planner.pricing import server_price_usd
from planner.schema.catalog import Fabric
from planner.schema.problem import InferenceService, Problem

# A linear expression as the builders make it: a sum that starts at 0 (or sums nothing) is
# still the int 0. Not cp_model.LinearExprT: it admits numpy integers, which do not add to a LinearExpr.
Expr: TypeAlias = cp_model.LinearExpr | int


@dataclass
class PoolVars:
    spec: PoolSpec
    servers: cp_model.IntVar  # the most installed in any year (what racks and the network must hold)
    racks: cp_model.IntVar
    fit_per_rack: int
    bought: list[cp_model.IntVar] = field(default_factory=list)  # per purchase year
    installed: list[Expr] = field(default_factory=list)  # per operating year (index 0 = year 1)


@dataclass
class FabricVars:
    fabric: Fabric
    ports: Expr
    leaves: cp_model.IntVar
    spines: cp_model.IntVar
    uplinks: cp_model.IntVar
    racks: cp_model.IntVar
    fit_per_rack: int


@dataclass
class Built:
    model: cp_model.CpModel
    pools: dict[PoolKey, PoolVars] = field(default_factory=dict)
    fabrics: dict[str, FabricVars] = field(default_factory=dict)
    train: dict[str, list[tuple[TrainingOption, cp_model.IntVar]]] = field(default_factory=dict)
    periods: int = 1  # operating years planned separately (1: one purchase up front serves every year)
    serve: dict[str, list[tuple[InferenceOption, list[cp_model.IntVar]]]] = field(default_factory=dict)  # per period
    serve_rates: dict[str, tuple[int, int, list[int]]] = field(default_factory=dict)  # need, spare, per replica
    # per mix service: (option index, bucket index, period) -> slices of the bucket routed to that kind
    routes: dict[str, dict[tuple[int, int, int], cp_model.IntVar]] = field(default_factory=dict)
    kept: dict[PoolKey, tuple[int, int]] = field(default_factory=dict)  # already owned: (servers, racks), sunk
    starts: dict[str, cp_model.IntVar] = field(default_factory=dict)
    durations: dict[str, Expr] = field(default_factory=dict)
    slacks: dict[str, cp_model.IntVar] = field(default_factory=dict)
    # per service: (capacity, demand) per period, in milli-requests/s (the rate limit holds them)
    capacity: dict[str, list[tuple[Expr, int]]] = field(default_factory=dict)
    capex: Expr = 0
    it_power_w: Expr = 0  # the peak: every pool at its most servers
    it_power_w_by_year: list[Expr] = field(default_factory=list)
    total_racks: Expr = 0
    tco: Expr = 0


def build(
    problem: Problem,
    catalog: Catalog,
    workloads: list[WorkloadOptions],
    relax: Collection[str] = (),
    kept: dict[PoolKey, tuple[int, int]] | None = None,
) -> Built:
    """``kept``: hardware already bought (``--keep``): it stays, its price is sunk, it still runs."""
    b = Built(cp_model.CpModel(), periods=problem.horizon_years if problem.yearly else 1, kept=dict(kept or {}))
    rates = Rates.of(problem)
    limits = every_limit(problem, catalog)
    for fam, lim in limits:  # elastic limits get a bounded slack a diagnosis can minimise
        if lim.name in relax:
            b.slacks[lim.name] = b.model.new_int_var(0, max(0, fam.slack_bound(lim)), f"slack[{lim.name}]")
    _pools(b, problem, catalog, workloads, relax)
    _training(b, problem, workloads)
    _serving(b, problem, workloads, relax)
    _gpu_use(b)
    _network(b, problem, catalog)
    _site(b, problem, catalog)
    for fam, lim in limits:  # the table of named limits: each family adds its own
        fam.add(b, problem, catalog, lim, b.slacks.get(lim.name, 0))
    b.tco = _objective(b, problem, catalog, rates) + _rent(b, problem, rates)
    if b.periods == 1:  # the floors price a replica for the whole horizon
        _service_floors(b, problem, catalog, rates, relax)
    b.model.minimize(b.tco)
    return b


def upper(var: cp_model.IntVar) -> int:
    """A variable's upper bound. (In ortools 9.15 ``proto.domain[-1]`` silently returns the
    first element: negative indexing of the proto wrapper is broken, so index from the front.)"""
    domain = var.proto.domain
    return int(domain[len(domain) - 1])


def _pools(
    b: Built, problem: Problem, catalog: Catalog, workloads: list[WorkloadOptions], relax: Collection[str]
) -> None:
    from planner.options.pools import pool_limit

    owned = [
        o for w in workloads for group in (w.training, w.inference) for o in group if o.rent_usd_per_gpu_hour is None
    ]
    keys = sorted({o.pool for o in owned} | set(b.kept)) if problem.finance.buy or b.kept else []
    site = problem.site
    m = b.model
    life = problem.finance.hardware_lifetime_years or b.periods
    for key in keys:
        spec = pool_spec(catalog, key)
        limit, _ = pool_limit(problem, catalog, key, ignore=relax)
        have, have_racks = b.kept.get(key, (0, 0))
        limit = max(limit, have)
        fit = per_rack(spec.rack_units, spec.power_w, site.rack_units, site.rack_power_kw)
        n = m.new_int_var(0, limit, f"servers[{key.label()}]")
        r = m.new_int_var(0, math.ceil(limit / fit), f"racks[{key.label()}]")
        # Homogeneous racks: each rack holds `fit` servers of this pool (rack_units, rack_power).
        m.add(r * fit >= n).with_name(f"racks_for[{key.label()}]")
        pv = PoolVars(spec, n, r, fit)
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


def _training(b: Built, problem: Problem, workloads: list[WorkloadOptions]) -> None:
    m = b.model
    horizon = u.days_up(problem.horizon_years * 365)
    jobs = {j.name: j for j in problem.training}
    for w in (w for w in workloads if w.kind == "training"):
        xs = [(o, m.new_bool_var(f"train[{w.name}#{i}]")) for i, o in enumerate(w.training)]
        b.train[w.name] = xs
        m.add_exactly_one(x for _, x in xs).with_name(f"job:{w.name}:option")
        b.durations[w.name] = sum(u.days_up(o.days) * x for o, x in xs)
    for name, job in jobs.items():
        latest = u.days_down(job.deadline_days)
        b.starts[name] = m.new_int_var(u.days_up(job.release_day), max(horizon, latest), f"start[{name}]")
    by_lower = {n.lower(): n for n in jobs}
    for name, job in jobs.items():
        for dep in job.after:
            pred = by_lower[dep.lower()]
            m.add(b.starts[name] >= b.starts[pred] + b.durations[pred]).with_name(f"job:{name}:after:{pred}")


def _serving(b: Built, problem: Problem, workloads: list[WorkloadOptions], relax: Collection[str]) -> None:
    services = {s.name: s for s in problem.inference}
    for w in (w for w in workloads if w.kind == "inference"):
        svc = services[w.name]
        if svc.mix is not None:
            _serving_mix(b, problem, svc, w, relax)
            continue
        m = b.model
        needs = [u.rps_up(r * (1 + svc.min_spare_share)) for r in _demand(problem, svc, b.periods)]
        reps, pers = [], []
        for i, o in enumerate(w.inference):
            per = u.rps_down(o.rps_per_replica)
            if per <= 0:
                continue
            ub = [math.ceil(need / per) + svc.spare_replicas for need in needs]
            rs = [m.new_int_var(0, ub[y], f"replicas[{w.name}#{i}@{y}]") for y in range(b.periods)]
            reps.append((o, rs))
            pers.append(per)
        b.serve[w.name] = reps
        b.serve_rates[w.name] = (needs[-1], svc.spare_replicas, pers)
        name = f"service:{w.name}:rate"
        s = b.slacks.get(name, 0)
        b.capacity[w.name] = []
        for y, need in enumerate(needs):
            year = [(o, rs[y], per) for (o, rs), per in zip(reps, pers, strict=True)]
            capacity = sum(per * r for _, r, per in year)
            b.capacity[w.name].append((capacity, need))  # the rate limit (planner.limits) holds it
            if year and name not in relax:
                _cover_cuts(m, year, need, svc.spare_replicas, f"{w.name}@{y}")
            if svc.spare_replicas:
                _spare(m, year, capacity + s, need, svc.spare_replicas, f"{w.name}@{y}")


def _demand(problem: Problem, svc: InferenceService, periods: int) -> list[float]:
    """Requests per second to serve in each planned period (one period: the peak year)."""
    if periods == 1:
        return [svc.peak_requests_per_s(problem.horizon_years)]
    return [svc.requests_per_s_in_year(y + 1) for y in range(periods)]


LOAD_PER_REPLICA = 1_000_000  # a replica's time in millionths: rounding up adds under 1e-4 replica per kind


def _serving_mix(b: Built, problem: Problem, svc: InferenceService, w: WorkloadOptions, relax: Collection[str]) -> None:
    """Per-bucket routing (as Mélange): each bucket is cut into ``slices`` equal slices and
    every slice goes to one replica kind that meets the bucket's targets. A kind's replicas
    are busy for the sum of its slices' shares of time: rate / (kind's rate on that bucket).
    """
    assert svc.mix is not None
    m = b.model
    slices = svc.mix.slices
    buckets = svc.mix.sized
    demand = [r * (1 + svc.min_spare_share) for r in _demand(problem, svc, b.periods)]
    reps: list[tuple[InferenceOption, list[cp_model.IntVar]]] = []
    routes: dict[tuple[int, int, int], cp_model.IntVar] = {}
    coef: dict[tuple[int, int, int], int] = {}
    for i, o in enumerate(w.inference):
        rs = []
        for y, rate in enumerate(demand):
            terms = []
            for k, bucket in enumerate(buckets):
                per = o.bucket_rps(k)
                if per <= 0:
                    continue
                z = m.new_int_var(0, slices, f"route[{w.name}#{i}/{bucket.label}@{y}]")
                routes[(i, k, y)] = z
                coef[(i, k, y)] = slice_load(rate * bucket.share, slices, per)
                terms.append((coef[(i, k, y)], z))
            most = sum(c * slices for c, _ in terms)
            r = m.new_int_var(0, math.ceil(most / LOAD_PER_REPLICA) + svc.spare_replicas, f"replicas[{w.name}#{i}@{y}]")
            load = sum(c * z for c, z in terms)
            m.add(load <= LOAD_PER_REPLICA * r).with_name(f"service:{w.name}:load#{i}@{y}")
            rs.append(r)
        reps.append((o, rs))
    b.serve[w.name] = reps
    b.routes[w.name] = routes
    b.serve_rates[w.name] = (u.rps_up(demand[-1]), svc.spare_replicas, [])
    for y in range(b.periods):
        for k, bucket in enumerate(buckets):
            served = [z for (i, kk, yy), z in routes.items() if kk == k and yy == y]
            tag = "" if b.periods == 1 else f"@{y + 1}"
            m.add(sum(served) == slices).with_name(f"service:{w.name}:rate:{bucket.label}{tag}")
        if svc.spare_replicas:
            # k whole replicas beyond the routed load, of kinds already serving
            total = sum(rs[y] for _, rs in reps)
            busy = sum(coef[key] * z for key, z in routes.items() if key[2] == y)
            m.add(LOAD_PER_REPLICA * total >= busy + LOAD_PER_REPLICA * svc.spare_replicas).with_name(
                f"service:{w.name}:spare@{y}"
            )


def slice_load(bucket_rps: float, slices: int, replica_rps: float) -> int:
    """A slice's load on one replica in millionths of its time, rounded up (never under-provision)."""
    return math.ceil(round(bucket_rps / slices / replica_rps * LOAD_PER_REPLICA, 6))


def _spare(
    m: cp_model.CpModel,
    reps: list[tuple[InferenceOption, cp_model.IntVar, int]],
    capacity: Expr,
    need: int,
    k: int,
    name: str,
) -> None:
    """N+k: demand is still met with k replicas of the largest kind in use down.

    Incremental form (tighter LP than one indicator per option): with options
    sorted by replica rate p_1 <= ... <= p_m, u_j says "some option j' >= j is
    used" (u_1 >= u_2 >= ...), so the largest rate in use is the telescoping sum
    of (p_j - p_{j-1}) u_j.
    """
    ordered = sorted(reps, key=lambda rep: rep[2])
    us = [m.new_bool_var(f"spare_tier[{name}#{j}]") for j in range(len(ordered))]
    for j, (_, r, _) in enumerate(ordered):
        m.add(r <= upper(r) * us[j])
        if j:
            m.add(us[j] <= us[j - 1])
    steps = [per - (ordered[j - 1][2] if j else 0) for j, (_, _, per) in enumerate(ordered)]
    largest = sum(step * u for step, u in zip(steps, us, strict=True))
    m.add(capacity >= need + k * largest).with_name(f"service:{name}:spare")


def _cover_cuts(
    m: cp_model.CpModel, reps: list[tuple[InferenceOption, cp_model.IntVar, int]], need: int, spare: int, name: str
) -> None:
    """Valid inequalities that tighten the LP bound a lot when replicas are large.

    Whatever kinds are used, capacity must reach ``need + spare * (smallest replica)``;
    in a covering constraint over integers, no replica counts for more than the
    right-hand side (a replica of 50 rps serving a 10 rps service is one whole
    replica, not a fifth). There are also at least ``spare + 1`` replicas.
    """
    rhs = need + spare * min(per for _, _, per in reps)
    m.add(sum(min(per, rhs) * r for _, r, per in reps) >= rhs).with_name(f"service:{name}:cover")
    if spare:
        m.add(sum(r for _, r, _ in reps) >= spare + 1).with_name(f"service:{name}:spare_count")


def _gpu_use(b: Built) -> None:
    """GPUs per pool: services hold theirs for the whole year; training jobs hold theirs
    only while they run, so jobs that do not overlap in time share a pool."""
    periods = range(b.periods)
    serve: dict[PoolKey, list[list[Expr]]] = {k: [[] for _ in periods] for k in b.pools}
    jobs: dict[PoolKey, list[tuple[TrainingOption, cp_model.IntVar, str]]] = {k: [] for k in b.pools}
    for name, xs in b.train.items():
        for o, x in xs:
            if o.rent_usd_per_gpu_hour is None:  # rented GPUs are the cloud's, not a pool's
                jobs[o.pool].append((o, x, name))
    for rs in b.serve.values():
        for rep, per_year in rs:
            if rep.rent_usd_per_gpu_hour is None:
                for y in periods:
                    serve[rep.pool][y].append(rep.gpus_per_replica * per_year[y])
    m = b.model
    for key, p in b.pools.items():
        # Sizes are powers of two dividing the server's GPU count, so a total that
        # fits the GPUs always packs into whole servers.
        gps = p.spec.gpus_per_server
        if not jobs[key]:
            for y in periods:
                m.add(sum(serve[key][y]) <= gps * p.installed[y]).with_name(f"gpus[{key.label()}@{y}]")
            continue
        # A cumulative's capacity must be one variable (cpsat-notes): the GPUs services leave free.
        most = gps * upper(p.servers)
        free = m.new_int_var(0, most, f"free_gpus[{key.label()}]")
        runs = [
            m.new_optional_fixed_size_interval_var(b.starts[name], u.days_up(o.days), x, f"run[{name}@{key.label()}]")
            for o, x, name in jobs[key]
        ]
        demands: list[cp_model.LinearExprT] = [o.gpus for o, _, _ in jobs[key]]
        if b.periods == 1:
            m.add(free == gps * p.servers - sum(serve[key][0])).with_name(f"gpus[{key.label()}]")
        else:
            # Capacity changes by year: a fixed block per year takes away what that year lacks
            # against the best year's free GPUs.
            year = u.days_up(365)
            for y in periods:
                spare = gps * p.installed[y] - sum(serve[key][y])
                m.add(spare >= 0).with_name(f"gpus[{key.label()}@{y}]")
                m.add(free >= spare)
                block = m.new_int_var(0, most, f"unavailable[{key.label()}@{y}]")
                m.add(block == free - spare)
                runs.append(m.new_fixed_size_interval_var(y * year, year, f"year[{key.label()}@{y}]"))
                demands.append(block)
        m.add_cumulative(runs, demands, free)


def _network(b: Built, problem: Problem, catalog: Catalog) -> None:
    m = b.model
    site = problem.site
    for fid in sorted({k.fabric for k in b.pools}):
        fabric = catalog.fabrics[fid]
        if fabric.kind == "none":
            continue
        members = [p for k, p in b.pools.items() if k.fabric == fid]
        ports = sum(p.spec.nics_per_server * p.servers for p in members)
        r = fabric.switch_radix
        cap = max_ports(fabric)
        most = sum(p.spec.nics_per_server * upper(p.servers) for p in members)
        hi = min(cap, most)
        m.add(ports <= cap).with_name(f"fabric:{fid}:ports")
        leaves = m.new_int_var(0, max(1, math.ceil(hi / (r // 2))), f"leaves[{fid}]")
        spines = m.new_int_var(0, max(1, math.ceil(hi / r)), f"spines[{fid}]")
        uplinks = m.new_int_var(0, upper(leaves) * (r // 2), f"uplinks[{fid}]")
        two_tier = m.new_bool_var(f"two_tier[{fid}]")
        m.add(leaves * r >= ports)
        m.add(ports <= r).only_enforce_if(~two_tier)
        m.add(spines == 0).only_enforce_if(~two_tier)
        m.add(uplinks == 0).only_enforce_if(~two_tier)
        m.add(leaves * (r // 2) >= ports).only_enforce_if(two_tier)
        m.add(2 * spines >= leaves).only_enforce_if(two_tier)
        m.add(uplinks == (r // 2) * leaves).only_enforce_if(two_tier)
        fit = max(1, per_rack(fabric.switch_rack_units, fabric.switch_power_w, site.rack_units, site.rack_power_kw))
        racks = m.new_int_var(0, math.ceil((upper(leaves) + upper(spines)) / fit), f"net_racks[{fid}]")
        m.add(racks * fit >= leaves + spines).with_name(f"racks_for[{fid}]")
        b.fabrics[fid] = FabricVars(fabric, ports, leaves, spines, uplinks, racks, fit)


def _site(b: Built, problem: Problem, catalog: Catalog) -> None:
    """The quantities site and money limits bound: capex, IT power by year, racks."""
    rack_price = u.usd(catalog.rack.price.usd)
    capex: Expr = 0
    power: Expr = 0
    racks: Expr = 0
    for p in b.pools.values():
        for y, bought in enumerate(p.bought):
            capex += u.usd(server_price_usd(p.spec, catalog, problem, y)) * bought
            capex += u.usd(p.spec.nic_price_usd) * p.spec.nics_per_server * bought
        racks += p.racks
    by_year = [sum(u.watts_up(p.spec.power_w) * p.installed[y] for p in b.pools.values()) for y in range(b.periods)]
    for f in b.fabrics.values():
        fab = f.fabric
        assert fab.switch_price and fab.cable_price
        capex += u.usd(fab.switch_price.usd) * (f.leaves + f.spines)
        capex += u.usd(fab.cable_price.usd) * (f.ports + f.uplinks)
        power += u.watts_up(fab.switch_power_w) * (f.leaves + f.spines)
        racks += f.racks
    capex += rack_price * racks
    for key, (have, have_racks) in b.kept.items():  # sunk: bought before this plan
        spec = b.pools[key].spec
        capex -= (u.usd(spec.server_price_usd) + u.usd(spec.nic_price_usd) * spec.nics_per_server) * have
        capex -= rack_price * have_racks
    peak = sum(u.watts_up(p.spec.power_w) * p.servers for p in b.pools.values())
    b.capex, b.it_power_w, b.total_racks = capex, power + peak, racks
    b.it_power_w_by_year = [power + servers_w for servers_w in by_year]


def _service_floors(b: Built, problem: Problem, catalog: Catalog, rates: Rates, relax: Collection[str]) -> None:
    """A per-service lower bound on the cost of its GPUs, as a cut the LP can use.

    Whole replicas (and N+k spares) make a service's cost a step function of its
    demand; the LP relaxation sees only the slope. Each service is solved alone
    over its replica counts, pricing a GPU at its share of a server and a rack
    (servers and racks shared with other services cost no less than that share),
    and the proven bound becomes ``sum(gpu cost x replicas) >= bound``. The cut
    is implied by the model, so it changes no optimum; it only closes the gap
    sooner on problems with many services.
    """
    site_per_gpu: dict[PoolKey, int] = {}
    for key, p in b.pools.items():
        server = rates.unit_tco_usd(p.spec.server_price_usd, p.spec.server_power_w, "server")
        rack = rates.unit_tco_usd(round(catalog.rack.price.usd), 0, "rack")
        site_per_gpu[key] = math.floor((server + rack / p.fit_per_rack) / p.spec.gpus_per_server)
    for name, per_year in b.serve.items():
        need, spare, pers = b.serve_rates[name]
        if not per_year or not pers or f"service:{name}:rate" in relax:
            continue  # no floor for mixes: their capacity depends on the routing
        reps = [(o, rs[0]) for o, rs in per_year]
        costs = [
            math.floor(rent_pv_usd(o, problem, rates))
            if o.rent_usd_per_gpu_hour is not None
            else site_per_gpu[o.pool] * o.gpus_per_replica
            for o, _ in reps
        ]
        alone = cp_model.CpModel()
        rs = [alone.new_int_var(0, upper(r), "r") for _, r in reps]
        triples = list(zip(reps, rs, pers, strict=True))
        capacity = sum(per * r for _, r, per in triples)
        alone.add(capacity >= need)
        if spare:
            _spare(alone, [(o, r, per) for (o, _), r, per in triples], capacity, need, spare, name)
        alone.minimize(sum(c * r for c, r in zip(costs, rs, strict=True)))
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = 1
        solver.parameters.max_deterministic_time = 0.5
        status = solver.solve(alone)
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            bound = math.floor(solver.best_objective_bound)
            b.model.add(sum(c * r for c, (_, r) in zip(costs, reps, strict=True)) >= bound).with_name(
                f"service:{name}:floor"
            )


def rent_pv_usd(option: InferenceOption | TrainingOption, problem: Problem, rates: Rates) -> float:
    """Present value of renting one option (one replica, or one training job) from a cloud.

    A replica is rented for every hour of the horizon, paid at the end of each year;
    a job for its hours, paid by the end of the year its deadline falls in.
    """
    price = option.rent_usd_per_gpu_hour or 0.0
    if isinstance(option, InferenceOption):
        return rates.replica_rent_pv_usd(option.gpus_per_replica, price)
    job = next(j for j in problem.training if j.name == option.job)
    return rates.job_rent_pv_usd(option.gpus, option.days, price, job.deadline_days)


def _rent(b: Built, problem: Problem, rates: Rates) -> Expr:
    cost: Expr = 0
    for xs in b.train.values():
        cost += sum(u.usd(rent_pv_usd(o, problem, rates)) * x for o, x in xs if o.rent_usd_per_gpu_hour is not None)
    for rs in b.serve.values():
        for o, per_year in rs:
            if o.rent_usd_per_gpu_hour is None:
                continue
            if b.periods == 1:
                cost += u.usd(rent_pv_usd(o, problem, rates)) * per_year[0]
                continue
            yearly = rates.replica_rent_usd_per_year(o.gpus_per_replica, o.rent_usd_per_gpu_hour)
            cost += sum(u.usd(yearly * rates.discount_factor(y + 1)) * r for y, r in enumerate(per_year))
    return cost


def _objective(b: Built, problem: Problem, catalog: Catalog, rates: Rates) -> Expr:
    """TCO in whole dollars: each unit's price plus its discounted running costs."""
    life = problem.finance.hardware_lifetime_years if b.periods > 1 else None

    def unit(price: float, power_w: float, category: str, year: int = 0, years: int | None = None) -> int:
        return u.usd(rates.unit_tco_usd(round(price), power_w, category, year, years))

    tco: Expr = 0
    for p in b.pools.values():
        s = p.spec
        for y, bought in enumerate(p.bought):
            price = server_price_usd(s, catalog, problem, y)
            tco += unit(price, s.server_power_w, "server", y, life) * bought
            tco += unit(s.nic_price_usd, s.nic_power_w, "network", y, life) * s.nics_per_server * bought
        tco += unit(catalog.rack.price.usd, 0, "rack") * p.racks
    for f in b.fabrics.values():
        fab = f.fabric
        assert fab.switch_price and fab.cable_price
        tco += unit(fab.switch_price.usd, fab.switch_power_w, "network") * (f.leaves + f.spines)
        tco += unit(fab.cable_price.usd, 0, "network") * (f.ports + f.uplinks)
        tco += unit(catalog.rack.price.usd, 0, "rack") * f.racks
    for key, (have, have_racks) in b.kept.items():  # their prices are sunk; running them is not
        s = b.pools[key].spec
        tco -= (u.usd(s.server_price_usd) + u.usd(s.nic_price_usd) * s.nics_per_server) * have
        tco -= u.usd(round(catalog.rack.price.usd)) * have_racks
    return tco
