"""Serving: replicas per service and period, request-size mixes routed per bucket, N+k
spares, and the cuts that tighten the LP bound (cover cuts, per-service cost floors)."""

from __future__ import annotations

import math
from collections.abc import Collection

from ortools.sat.python import cp_model

from planner import units as u
from planner.bom import PoolKey
from planner.catalog import Catalog
from planner.domains import pool_replicas_per_domain
from planner.finance import Rates
from planner.optimize.built import Built, Expr, Floor, upper
from planner.optimize.costs import rent_pv_usd
from planner.optimize.disagg import group_flows
from planner.options.types import InferenceOption, WorkloadOptions
from planner.perf.memo import Memo
from planner.pricing import pool_pue, server_unit_tco_usd
from planner.schema.problem import InferenceService, Problem


def serving(
    b: Built, problem: Problem, catalog: Catalog, workloads: list[WorkloadOptions], relax: Collection[str]
) -> None:
    services = {s.name: s for s in problem.inference}
    for w in (w for w in workloads if w.kind == "inference"):
        svc = services[w.name]
        if svc.mix is not None:
            _serving_mix(b, problem, catalog, svc, w, relax)
            continue
        m = b.model
        needs = [u.rps_up(r * (1 + svc.min_spare_share)) for r in _demand(problem, svc, b.periods)]
        reps, pers, qs = [], [], []
        for i, o in enumerate(w.inference):
            per = u.rps_down(o.rps_per_replica)
            if per <= 0:
                continue
            q = _per_domain(o, svc, catalog, problem)
            ub = [math.ceil(need / per) + svc.spare_replicas * q for need in needs]
            rs = [m.new_int_var(0, ub[y], f"replicas[{w.name}#{i}@{y}]") for y in range(b.periods)]
            reps.append((o, rs))
            pers.append(per)
            qs.append(q)
        b.serve[w.name] = reps
        split = any(o.disaggregated for o, _ in reps)
        b.serve_rates[w.name] = (needs[-1], svc.spare_replicas, pers, qs)
        name = f"service:{w.name}:rate"
        s = b.slacks.get(name, 0)
        b.capacity[w.name] = []
        for y, need in enumerate(needs):
            every = [(o, rs[y], per) for (o, rs), per in zip(reps, pers, strict=True)]
            year = [rep for rep in every if not rep[0].disaggregated]
            flows, _ = group_flows(m, w.name, every, need, y) if split else (0, {})
            capacity = sum(per * r for _, r, per in year) + flows
            b.capacity[w.name].append((capacity, need))  # the rate limit (planner.limits) holds it
            if year and name not in relax and not split:
                _cover_cuts(m, year, need, svc.spare_replicas, f"{w.name}@{y}")
            elif split and name not in relax:
                cover = sum(min(per, need) * r for _, r, per in year) + flows
                m.add(cover >= need).with_name(f"service:{w.name}@{y}:cover")
            if svc.spare_replicas:
                _domain_spare(m, year, qs, capacity + s, need, svc.spare_replicas, f"{w.name}@{y}")


def _per_domain(o: InferenceOption, svc: InferenceService, catalog: Catalog, problem: Problem) -> int:
    return pool_replicas_per_domain(o.pool, o.gpus_per_replica, catalog, problem.site, svc.spare_domain)


def _demand(problem: Problem, svc: InferenceService, periods: int) -> list[float]:
    """Requests per second to serve in each planned period (one period: the peak year)."""
    if periods == 1:
        return [svc.peak_requests_per_s(problem.horizon_years)]
    return [svc.requests_per_s_in_year(y + 1) for y in range(periods)]


LOAD_PER_REPLICA = 1_000_000  # a replica's time in millionths: rounding up adds under 1e-4 replica per kind


def _serving_mix(
    b: Built, problem: Problem, catalog: Catalog, svc: InferenceService, w: WorkloadOptions, relax: Collection[str]
) -> None:
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
    loads: dict[tuple[int, int], cp_model.IntVar] = {}
    per_domain = [_per_domain(o, svc, catalog, problem) for o in w.inference]
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
            if o.colocated_factor < 1:
                most = math.ceil(most / max(o.colocated_factor, 1e-3))
            spares = svc.spare_replicas * per_domain[i]
            r = m.new_int_var(0, math.ceil(most / LOAD_PER_REPLICA) + spares, f"replicas[{w.name}#{i}@{y}]")
            # the replica-time the kind's routed slices take (more when it serves several buckets)
            load = m.new_int_var(0, most, f"load[{w.name}#{i}@{y}]")
            m.add(load >= sum(c * z for c, z in terms))
            m.add(load <= LOAD_PER_REPLICA * r).with_name(f"service:{w.name}:load#{i}@{y}")
            rs.append(r)
            loads[(i, y)] = load
        reps.append((o, rs))
        _colocation(b, w.name, i, o, routes, coef, [loads[(i, y)] for y in range(len(demand))], slices)
    b.serve[w.name] = reps
    b.routes[w.name] = routes
    b.serve_rates[w.name] = (u.rps_up(demand[-1]), svc.spare_replicas, [], per_domain)
    for y in range(b.periods):
        for k, bucket in enumerate(buckets):
            served = [z for (i, kk, yy), z in routes.items() if kk == k and yy == y]
            tag = "" if b.periods == 1 else f"@{y + 1}"
            m.add(sum(served) == slices).with_name(f"service:{w.name}:rate:{bucket.label}{tag}")
        if svc.spare_replicas:
            _mix_spares(b, svc, reps, per_domain, loads, y)


def _mix_spares(
    b: Built,
    svc: InferenceService,
    reps: list[tuple[InferenceOption, list[cp_model.IntVar]]],
    per_domain: list[int],
    loads: dict[tuple[int, int], cp_model.IntVar],
    y: int,
) -> None:
    """Each kind carries its own routed load with k failure domains down: a spare must be able
    to take the traffic it stands in for, and only replicas that serve the same buckets can
    (a kind's replicas are the ones that do, whatever the packing puts beside them)."""
    m = b.model
    for i, ((_, rs), q) in enumerate(zip(reps, per_domain, strict=True)):
        # k x min(r, q) replicas down: a kind with fewer than q replicas would lose them all, so
        # one in use has at least k x q beyond its load, and min(r, q) is q
        r = rs[y]
        used = m.new_bool_var(f"in_use[{r.name}]")
        m.add(r <= upper(r) * used)
        m.add(LOAD_PER_REPLICA * r >= loads[(i, y)] + LOAD_PER_REPLICA * svc.spare_replicas * q * used).with_name(
            f"service:{svc.name}:spare#{i}@{y}"
        )


def _colocation(
    b: Built,
    name: str,
    i: int,
    o: InferenceOption,
    routes: dict[tuple[int, int, int], cp_model.IntVar],
    coef: dict[tuple[int, int, int], int],
    loads: list[cp_model.IntVar],
    slices: int,
) -> None:
    """A kind serving more than one bucket runs slower on each: prompts of other sizes lengthen
    its iterations (``InferenceOption.colocated_factor``). Its load then counts divided by the
    factor; a factor of 0 keeps its buckets apart."""
    served = sorted({k for (ii, k, _) in routes if ii == i})
    if o.colocated_factor >= 1 or len(served) < 2:
        return
    m = b.model
    used = {k: m.new_bool_var(f"serves[{name}#{i}/{k}]") for k in served}
    for (ii, k, _), z in routes.items():
        if ii == i:
            m.add(z <= slices * used[k])
    shared = m.new_bool_var(f"colocated[{name}#{i}]")
    m.add(sum(used.values()) <= 1 + (len(served) - 1) * shared)
    if o.colocated_factor <= 0:
        m.add(shared == 0)
        return
    for y, load in enumerate(loads):
        terms = [
            (math.ceil(c / o.colocated_factor), routes[key]) for key, c in coef.items() if key[0] == i and key[2] == y
        ]
        m.add(load >= sum(c * z for c, z in terms)).only_enforce_if(shared).with_name(
            f"service:{name}:colocated#{i}@{y}"
        )


def slice_load(bucket_rps: float, slices: int, replica_rps: float) -> int:
    """A slice's load on one replica in millionths of its time, rounded up (never under-provision)."""
    return math.ceil(round(bucket_rps / slices / replica_rps * LOAD_PER_REPLICA, 6))


def _domain_spare(
    m: cp_model.CpModel,
    reps: list[tuple[InferenceOption, cp_model.IntVar, int]],
    per_domain: list[int],
    capacity: Expr,
    need: int,
    k: int,
    name: str,
) -> None:
    """N+k by failure domain: the demand is still met with any k domains down (planner.domains).

    One domain holds at most ``min(replicas, per_domain)`` of a kind; a service with spares runs
    one kind per pool wherever two kinds could share a server, so the worst domain loses
    ``max over kinds of rate x min(replicas, per_domain)``. With every kind filling its domain
    (per_domain 1) that is the largest replica in use, held in the tighter tier form alone.
    """
    largest = _largest_in_use(m, reps, name)
    if all(q == 1 for q in per_domain):
        m.add(capacity >= need + k * largest).with_name(f"service:{name}:spare")
        return
    by_pool: dict[PoolKey, list[tuple[cp_model.IntVar, int]]] = {}
    for (o, r, _), q in zip(reps, per_domain, strict=True):
        by_pool.setdefault(o.pool, []).append((r, q))
    for pool, kinds in sorted(by_pool.items()):
        if len(kinds) > 1 and any(q > 1 for _, q in kinds):
            used = [m.new_bool_var(f"kind_used[{name}/{pool.label()}#{j}]") for j in range(len(kinds))]
            for (r, _), flag in zip(kinds, used, strict=True):
                m.add(r <= upper(r) * flag)
            m.add(sum(used) <= 1).with_name(f"service:{name}:one_kind[{pool.label()}]")
    # loss >= rate x min(r, q) for every kind: exactly, by a disjunction on which is smaller,
    # and by the chord of min(r, q) over r in [0, upper(r)], which the LP relaxation sees (tight
    # for a kind serving alone: its upper bound is demand / rate + k x q)
    most = max(per * q for (_, _, per), q in zip(reps, per_domain, strict=True))
    loss = m.new_int_var(0, most, f"domain_loss[{name}]")
    m.add(loss >= largest)
    for (_, r, per), q in zip(reps, per_domain, strict=True):
        if q == 1 or upper(r) == 0:
            continue
        m.add(upper(r) * loss >= per * min(q, upper(r)) * r)
        full = m.new_bool_var(f"fills_domain[{r.name}]")
        m.add(loss >= per * q).only_enforce_if(full)
        m.add(r <= q - 1).only_enforce_if(~full)
        m.add(loss >= per * r).only_enforce_if(~full)
    m.add(capacity >= need + k * loss).with_name(f"service:{name}:spare")


def _largest_in_use(m: cp_model.CpModel, reps: list[tuple[InferenceOption, cp_model.IntVar, int]], name: str) -> Expr:
    """The largest replica rate in use.

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
    return sum(step * u for step, u in zip(steps, us, strict=True))


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


def service_floors(b: Built, problem: Problem, catalog: Catalog, rates: Rates, relax: Collection[str]) -> None:
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
        server = server_unit_tco_usd(p.spec, catalog, problem, rates)
        pue = pool_pue(p.spec, catalog, problem)
        server -= p.spec.nics_per_server * rates.unit_tco_usd(
            p.spec.nic_price_usd, p.spec.nic_power_w, "network", pue=pue
        )
        rack = rates.unit_tco_usd(round(catalog.rack.price.usd), 0, "rack")
        # racks the site already has cost nothing: no share of one is certain
        rack_share = rack / p.fit_per_rack if p.fit_per_rack and not problem.site.existing_racks else 0.0
        site_per_gpu[key] = math.floor((server + rack_share) / p.spec.gpus_per_server)
    b.gpu_share_usd = site_per_gpu
    for name, per_year in b.serve.items():
        need, spare, pers, per_domain = b.serve_rates[name]
        if not per_year or not pers or f"service:{name}:rate" in relax:
            continue  # no floor for mixes: their capacity depends on the routing
        reps = [(o, rs[0]) for o, rs in per_year]
        costs = [
            math.floor(rent_pv_usd(o, problem, rates))
            if o.rent_usd_per_gpu_hour is not None
            else site_per_gpu[o.pool] * o.gpus_per_replica
            for o, _ in reps
        ]
        found = service_floor(reps, costs, pers, per_domain, need, spare, name)
        b.floors[name] = Floor(reps, costs, pers, per_domain, need, spare, found)
        if found is not None:
            bound = found[0]
            b.model.add(sum(c * r for c, (_, r) in zip(costs, reps, strict=True)) >= bound).with_name(
                f"service:{name}:floor"
            )


_FLOORS: Memo[tuple[int, tuple[int, ...]] | None] = Memo(10_000)


def service_floor(
    reps: list[tuple[InferenceOption, cp_model.IntVar]],
    costs: list[int],
    pers: list[int],
    per_domain: list[int],
    need: int,
    spare: int,
    name: str,
    uppers: list[int] | None = None,
    limit_s: float | None = None,
) -> tuple[int, tuple[int, ...]] | None:
    """The least cost of a service's GPUs served alone (its proven bound) and the replicas per
    kind that reach it, kept for the process: what-if variants that change neither its demand
    nor its prices ask the same question. ``uppers``: at most so many replicas per kind (0
    leaves a kind out; default: the model's bounds)."""
    tops = [upper(r) for _, r in reps] if uppers is None else uppers
    limit = FLOOR_DET_S if limit_s is None else limit_s
    pools = tuple(o.pool for o, _ in reps)  # kinds sharing a pool are one kind at a time
    modes = tuple((o.mode, o.kv_group) for o, _ in reps)
    key = (pools, modes, tuple(costs), tuple(tops), tuple(pers), tuple(per_domain), need, spare, limit)
    return _FLOORS.get(key, lambda: solve_alone(reps, tops, costs, pers, per_domain, need, spare, name, limit))


FLOOR_DET_S = 0.5


def solve_alone(
    reps: list[tuple[InferenceOption, cp_model.IntVar]],
    uppers: list[int],
    costs: list[int],
    pers: list[int],
    per_domain: list[int],
    need: int,
    spare: int,
    name: str,
    limit_s: float,
) -> tuple[int, tuple[int, ...]] | None:
    """A service alone over its replica counts (``uppers`` bound each kind; 0 leaves a kind
    out): its proven least cost and the counts of the best mix found, or None."""
    alone, rs = alone_model(reps, uppers, pers, per_domain, need, spare, name)
    alone.minimize(sum(c * r for c, r in zip(costs, rs, strict=True)))
    return solved_alone(alone, rs, limit_s)


def alone_model(
    reps: list[tuple[InferenceOption, cp_model.IntVar]],
    uppers: list[int],
    pers: list[int],
    per_domain: list[int],
    need: int,
    spare: int,
    name: str,
) -> tuple[cp_model.CpModel, list[cp_model.IntVar]]:
    """A service's demand and spares over its replica counts, as in the full model (no objective)."""
    alone = cp_model.CpModel()
    rs = [alone.new_int_var(0, top, "r") for top in uppers]
    triples = list(zip(reps, rs, pers, strict=True))
    # disaggregated phases serve in pairs: their KV groups' flows, as in the full model
    flows, _ = group_flows(alone, name, [(o, r, per) for (o, _), r, per in triples], need, 0)
    capacity = sum(per * r for (o, _), r, per in triples if not o.disaggregated) + flows
    alone.add(capacity >= need)
    if spare:
        _domain_spare(alone, [(o, r, per) for (o, _), r, per in triples], per_domain, capacity, need, spare, name)
    return alone, rs


def solved_alone(
    alone: cp_model.CpModel, rs: list[cp_model.IntVar], limit_s: float
) -> tuple[int, tuple[int, ...]] | None:
    """One worker, a deterministic limit: the proven bound and the counts found, or None."""
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_deterministic_time = limit_s
    status = solver.solve(alone)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    return math.floor(solver.best_objective_bound), tuple(int(solver.value(r)) for r in rs)
