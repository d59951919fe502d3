"""Serving: replicas per service and period, request-size mixes routed per bucket, N+k
spares, and the cover cuts that tighten the LP bound (each service's cost floor alone:
``optimize.floors``)."""

from __future__ import annotations

import math
from collections.abc import Collection

from ortools.sat.python import cp_model

from planner import units as u
from planner.bom import PoolKey
from planner.catalog import Catalog
from planner.domains import pool_replicas_per_domain
from planner.optimize.built import Built, Expr, upper
from planner.optimize.disagg import group_flows
from planner.options.types import InferenceOption, WorkloadOptions
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
                domain_spare(m, year, qs, capacity + s, need, svc.spare_replicas, f"{w.name}@{y}")


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


def domain_spare(
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
