"""A first plan for large fleets: services gathered on few pools, then the rest solved.

Each service alone is cheapest on its own mix of replica kinds (its cost floor), but forty
services on forty mixes leave many pools of part-filled servers: on the benchmark fleet
(``benchmarks/bench_large.py``, seed 7) the plan with every service at its own floor costs
$18.2M, and the search alone reached $17.0M in 60 deterministic seconds ($15.7M from the start
made here). This is facility
location, and its classic greedy works: first the GPU types are those of the services' joint floor
(``optimize.type_set_floor``; or closed greedily, each while its services lose less than its
charge, ``optimize.type_closing``); then from the pools left, drop the pool whose
services, moved to their best mix on the pools left, save the most servers, while that saves
money; then one pass moves each service to its cheapest mix given the others' servers (GPUs left
free in a part-filled server cost it nothing). Then the model with every such service's replicas
fixed to its mix is solved (the jobs, network and racks stay free: a quick solve). From its plan,
the model with each service's replicas restricted to a few choices (a table constraint: its mix
gathered, its mix with every pool of the types kept, and its best mix off each pool either uses)
is solved: the exact costs choose which services leave which part-filled servers, and the jobs
fill what is left. Its plan starts the search as a complete hint. On bench_large (seeds 7, 11)
the search after the fixed start alone found $15.55M and $14.80M in 60 deterministic seconds;
the choosing start finds $15.38M and $14.71M in 25.

The start changes no bound and no optimum: a hint only orders the search. It is deterministic
(each service's solve has a deterministic limit and one worker; ties go by pool label).
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass

from ortools.sat.python import cp_model

from planner.bom import PoolKey
from planner.optimize.built import Built, Counts, Expr, Floor, upper
from planner.optimize.floors import FLEET_SERVICES, alone_model, solve_alone, solved_alone
from planner.optimize.type_closing import close_types

MIN_SERVICES = FLEET_SERVICES  # fewer services share few pools anyway: the search finds the plan itself
ALONE_DET_S = 0.2  # each service's solve on the pools left (the best found within it will do)
CANDIDATES = 6  # pools tried per round: the least filled
MAX_ROUNDS = 30
REFILL_DET_S = 0.1  # each service's solve given the others' servers
MAX_SOLVES = 300  # services solved again in all: bounds the work on a fleet of hundreds of services


@dataclass(frozen=True)
class Mix:
    """A service's replicas per kind, the GPUs they take per pool, and their rent (share dollars)."""

    counts: tuple[int, ...]
    gpus: dict[PoolKey, int]
    rent_usd: int


def start_model(b: Built) -> list[cp_model.CpModel] | None:
    """Two starts, solved in turn (``solve.solve``'s ``start_from``): the model with each floored
    service's replicas fixed to its mix on the chosen pools, then the model with each service's
    replicas one of its choices (``service_choices``). None when there are too few services (or
    several periods: floors are for one)."""
    found = service_choices(b)
    if found is None:
        return None
    floors, by_service = found
    fixed, chosen = b.model.clone(), b.model.clone()
    for name, choices in by_service.items():
        rs = [r.index for _, r in floors[name].reps]
        for i, count in zip(rs, choices[0], strict=True):
            fixed.add(fixed.get_int_var_from_proto_index(i) == count)
        chosen.add_allowed_assignments([chosen.get_int_var_from_proto_index(i) for i in rs], [list(c) for c in choices])
    return [fixed, chosen]


def service_choices(b: Built) -> tuple[dict[str, Floor], dict[str, list[Counts]]] | None:
    """The floored services, and each one's replica counts to choose among: its mix gathered on
    few pools first (the fixed start's), then the others (``_alternatives``). None as for
    ``start_model``.

    Each service begins on the types of the services' joint floor (``optimize.type_set_floor``),
    or, when that was not solved, on those the greedy type closing keeps."""
    floors = {name: f for name, f in sorted(b.floors.items()) if f.found is not None}
    if b.periods != 1 or len(floors) < MIN_SERVICES:
        return None
    counts = b.type_set.mixes if b.type_set is not None else {}
    if set(counts) != set(floors):  # the joint floor was not solved for every service
        counts = close_types(b, floors)
    on_types = {name: _mix(floors[name], c) for name, c in counts.items()}
    gathered = _refill(b, floors, _consolidate(b, floors, on_types))
    # every type's pools kept too: gathering drops a pool whose services cannot fill its servers
    # alone, which choosing among mixes may fill (seed 7: $15.55M gathered only, $15.38M both)
    kept = _refill(b, floors, on_types)
    return floors, _alternatives(b, floors, [gathered, kept])


SHIFT_DET_S = 0.2  # each service's solve off one pool
MAX_SHIFTS = 400  # such solves in all: bounds the work on a fleet of hundreds


def _alternatives(b: Built, floors: dict[str, Floor], starts: list[dict[str, Mix]]) -> dict[str, list[Counts]]:
    """Each service's mixes in the starts (the first start's first), and for each its best mix
    off each pool it uses (on the pools that start uses): the start's solve picks one per
    service, so it can empty a server the mixes part-fill."""
    out: dict[str, list[Counts]] = {name: [] for name in starts[0]}
    solves = 0
    for mixes in starts:
        open_ = set(_used(mixes))
        for name, mix in mixes.items():
            f = floors[name]
            out[name].append(mix.counts)
            for key in sorted(mix.gpus, key=lambda k: k.label()):
                keep = _kinds_on(f, open_ - {key})
                if not keep or solves >= MAX_SHIFTS:
                    continue
                solves += 1
                found = solve_alone(f.only(keep), name, SHIFT_DET_S)
                if found is not None:
                    out[name].append(_spread(len(f.reps), keep, found[1]))
    return {name: list(dict.fromkeys(got)) for name, got in out.items()}


def _mix(f: Floor, counts: tuple[int, ...]) -> Mix:
    gpus: dict[PoolKey, int] = {}
    rent = 0
    for (o, _), cost, n in zip(f.reps, f.costs, counts, strict=True):
        if not n:
            continue
        if o.rent_usd_per_gpu_hour is not None:
            rent += cost * n
        else:
            gpus[o.pool] = gpus.get(o.pool, 0) + o.gpus_per_replica * n
    return Mix(counts, gpus, rent)


def _used(mixes: dict[str, Mix]) -> dict[PoolKey, int]:
    """GPUs per pool."""
    used: dict[PoolKey, int] = {}
    for mix in mixes.values():
        for key, g in mix.gpus.items():
            used[key] = used.get(key, 0) + g
    return used


def _cost(b: Built, mixes: dict[str, Mix]) -> int:
    """Whole servers per pool at their share price, and the rent."""
    used = _used(mixes)
    servers = 0
    for key, g in used.items():
        per = b.pools[key].spec.gpus_per_server
        servers += b.gpu_share_usd[key] * per * math.ceil(g / per)
    return servers + sum(m.rent_usd for m in mixes.values())


def _consolidate(b: Built, floors: dict[str, Floor], mixes: dict[str, Mix]) -> dict[str, Mix]:
    allowed = {key for mix in mixes.values() for key in mix.gpus}
    best = _cost(b, mixes)
    seen: Seen = {}
    for _ in range(MAX_ROUNDS):
        trials = []
        for key in _least_filled(b, mixes, allowed):
            moved = _without(floors, mixes, allowed - {key}, key, seen)
            if moved is not None:
                trial = {**mixes, **moved}
                trials.append((_cost(b, trial), key.label(), key, trial))
        if not trials:
            break
        cost, _, key, trial = min(trials, key=lambda t: (t[0], t[1]))
        if cost >= best:
            break
        best, mixes = cost, trial
        allowed.discard(key)
    return mixes


def _least_filled(b: Built, mixes: dict[str, Mix], allowed: set[PoolKey]) -> list[PoolKey]:
    """The pools in use with the fewest GPUs' worth of servers: where whole servers waste most."""
    used = _used(mixes)
    ranked = sorted((key for key in used if key in allowed), key=lambda k: (used[k] * b.gpu_share_usd[k], k.label()))
    return ranked[:CANDIDATES]


Seen = dict[str, list[tuple[frozenset[PoolKey], Mix | None]]]


def _without(
    floors: dict[str, Floor], mixes: dict[str, Mix], allowed: set[PoolKey], dropped: PoolKey, seen: Seen
) -> dict[str, Mix] | None:
    """The mixes of the services on ``dropped``, each solved again on ``allowed`` (rent stays
    open); ``seen`` keeps each service's answers by the pools that were open."""
    out = {}
    for name, mix in mixes.items():
        if dropped not in mix.gpus:
            continue
        f = floors[name]
        open_ = frozenset(o.pool for o, _ in f.reps if o.rent_usd_per_gpu_hour is None and o.pool in allowed)
        moved = _known(seen.setdefault(name, []), open_)
        if moved is None and sum(len(a) for a in seen.values()) >= MAX_SOLVES:
            return None
        if moved is None:
            moved = _alone(f, open_, name)
            seen[name].append((open_, moved))
        if moved is None:
            return None
        out[name] = moved
    return out


def _known(answers: list[tuple[frozenset[PoolKey], Mix | None]], open_: frozenset[PoolKey]) -> Mix | None:
    """An answer on more pools that uses only pools still open is the answer on fewer too."""
    for was, mix in answers:
        if mix is not None and open_ <= was and set(mix.gpus) <= open_:
            return mix
    return None


def _alone(f: Floor, open_: frozenset[PoolKey], name: str) -> Mix | None:
    """The service's best mix on the open pools (and rent), solved on those kinds only."""
    keep = _kinds_on(f, open_)
    found = solve_alone(f.only(keep), name, ALONE_DET_S)
    return None if found is None else _mix(f, _spread(len(f.reps), keep, found[1]))


def _kinds_on(f: Floor, open_: Collection[PoolKey]) -> list[int]:
    """The service's kinds (indices) on the open pools, and its rented ones."""
    return [i for i, (o, _) in enumerate(f.reps) if o.rent_usd_per_gpu_hour is not None or o.pool in open_]


def _spread(n: int, keep: list[int], found: tuple[int, ...]) -> tuple[int, ...]:
    """Counts found on the kept kinds, as counts over all ``n`` kinds (0 elsewhere)."""
    counts = [0] * n
    for i, c in zip(keep, found, strict=True):
        counts[i] = c
    return tuple(counts)


def _refill(b: Built, floors: dict[str, Floor], mixes: dict[str, Mix]) -> dict[str, Mix]:
    """One pass over the services, each moved to its cheapest mix on the pools in use given the
    others' servers: it pays only for the servers it adds, so GPUs the others leave free in a
    part-filled server cost it nothing (what share prices cannot see)."""
    open_ = set(_used(mixes))
    for name in sorted(mixes):
        f = floors[name]
        others = _used({n: m for n, m in mixes.items() if n != name})
        keep = _kinds_on(f, open_)
        alone, rs = alone_model(f.only(keep), name)
        by_pool: dict[PoolKey, list[tuple[int, cp_model.IntVar, int]]] = {}
        cost: Expr = 0
        for i, r in zip(keep, rs, strict=True):
            o = f.reps[i][0]
            alone.add_hint(r, mixes[name].counts[i])
            if o.rent_usd_per_gpu_hour is not None:
                cost += f.costs[i] * r
            else:
                by_pool.setdefault(o.pool, []).append((o.gpus_per_replica, r, upper(f.reps[i][1])))
        for key, kinds in sorted(by_pool.items(), key=lambda kv: kv[0].label()):
            per = b.pools[key].spec.gpus_per_server
            have = others.get(key, 0)
            free = math.ceil(have / per) * per - have
            most = sum(g * top for g, _, top in kinds)
            extra = alone.new_int_var(0, math.ceil(most / per), "servers")
            alone.add(per * extra >= sum(g * r for g, r, _ in kinds) - free)
            cost += b.gpu_share_usd[key] * per * extra
        alone.minimize(cost)
        found = solved_alone(alone, rs, REFILL_DET_S)
        if found is None:
            continue
        moved = {**mixes, name: _mix(f, _spread(len(f.reps), keep, found[1]))}
        if _cost(b, moved) < _cost(b, mixes):
            mixes = moved
    return mixes
