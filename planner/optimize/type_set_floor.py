"""The services' and GPU types' joint floor: the least the services can cost on any set of types,
with each type's charge, as one cut.

The closing cuts (``optimize.type_floors``) price each type's closing one service and one type at
a time; the LP relaxation can still buy slivers of types that stand in for each other. On the
benchmark fleet (``benchmarks/bench_large.py`` seed 7) the exact floor over type sets is $14.10M
and the LP's services and charges less: the whole bound rose from $15.11M to $15.18M (seed 13:
$22.86M to $22.93M; seed 11's LP was above its $13.01M already). A branch and bound over type
sets found the same $14.10M in 225 s; this takes 17 s (8 rounds on seed 11, 13 s). Its type set
is also where the consolidated start begins (``optimize.consolidate``).

The least over type sets ``T`` of ``charge x |T| + sum over services of F_s(T)`` (``F_s(T)`` a
service's least cost on ``T`` alone) is found as Benders would: a small master over the type
flags knows, for each service, closed sets ``C`` with a proven least cost ``G`` when all of
``C`` is closed (and sets without which it has no mix); its optimum ``T*`` is a lower bound,
and each service is then solved off the types ``T*`` leaves out. Only the types its best mixes
use are closed, one mix at a time, until the best mix uses none of them: that mix is the
service's best on ``T*`` and the small closed set holds for every type set without it. When no
service's cost on ``T*`` rises, the master's optimum is the floor itself.

The master's proven bound is valid at every round, so a round cap only weakens the cut:

    sum over services (GPUs at share prices) + charge x (types bought) >= the master's bound

holds in every plan (a plan's types are one ``T``). It changes no optimum.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from planner.optimize.built import Built, Counts, Floor, TypeSet, upper
from planner.optimize.floors import alone_model, service_floor
from planner.optimize.type_floors import CLOSED_DET_S, mix_types, owned_type

MAX_ROUNDS = 30
MAX_SOLVES = 600  # services solved off closed types, in all (memoised with the floors)
MASTER_DET_S = 2.0
MAX_SERVICES = 200  # past it one round's solves pass MAX_SOLVES: the floor would be the LP's


@dataclass
class _Known:
    """What is proven of one service: least costs with closed sets, and sets it cannot lose."""

    floor: int
    costs: dict[frozenset[str], int] = field(default_factory=dict)
    needs: set[frozenset[str]] = field(default_factory=set)


def add_type_set_floor(b: Built) -> None:
    """Add the cut, and keep the type set found and each service's best mix on it
    (``Built.type_set``: the consolidated start begins there)."""
    floors = {n: f for n, f in sorted(b.floors.items()) if f.found is not None}
    if len(floors) > MAX_SERVICES or not b.gpu_type_used:
        return
    known = {n: _Known(f.found[0]) for n, f in floors.items()}  # type: ignore[index]
    solves = 0
    bound, types = _master(b, known)
    for _ in range(MAX_ROUNDS):  # the master again after each round that proved more
        if types is None or solves >= MAX_SOLVES:
            break
        grew = False
        for name, f in floors.items():
            if solves < MAX_SOLVES:
                added, used, _ = _learn(b, f, name, known[name], types)
                grew |= added
                solves += used
        if not grew:
            break
        bound, types = _master(b, known)
    if types is None or bound is None:
        return
    costs = [sum(c * r for c, (_, r) in zip(f.costs, f.reps, strict=True)) for f in floors.values()]
    flags = [b.gpu_type_used[t] for t in sorted(b.gpu_type_used)]
    b.model.add(sum(costs) + b.gpu_type_charge_usd * sum(flags) >= bound).with_name("services:type_set_floor")
    mixes = {name: _learn(b, f, name, known[name], types)[2] for name, f in floors.items()}
    b.type_set = TypeSet(bound, frozenset(types), {n: c for n, c in mixes.items() if c is not None})


def _learn(b: Built, f: Floor, name: str, k: _Known, types: set[str]) -> tuple[bool, int, Counts | None]:
    """Solve the service off the types outside ``types``, closing only those its best mixes use;
    returns whether anything new was proven, the solves it took and its best mix on ``types``
    (None when it was not found)."""
    assert f.found is not None
    counts, closed, solves, added = f.found[1], frozenset[str](), 0, False
    while used := mix_types(b, f, counts) - types:
        closed |= used
        if closed in k.needs:
            return added, solves, None
        solves += closed not in k.costs  # a known set is asked of the memo again, not solved
        uppers = [0 if owned_type(b, o) and o.pool.gpu in closed else upper(r) for o, r in f.reps]
        found = service_floor(f, name, uppers, CLOSED_DET_S) if any(uppers) else None
        if found is None:
            if any(uppers) and not _infeasible(f, name, uppers):
                return added, solves, None  # not proven either way
            k.needs.add(closed)
            return True, solves, None
        added |= closed not in k.costs
        k.costs[closed] = max(found[0], k.floor)
        counts = found[1]
    return added, solves, counts


def _infeasible(f: Floor, name: str, uppers: list[int]) -> bool:
    alone, _ = alone_model(f, name, uppers)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_deterministic_time = CLOSED_DET_S
    return solver.solve(alone) == cp_model.INFEASIBLE


def _master(b: Built, known: dict[str, _Known]) -> tuple[int | None, set[str] | None]:
    """The least charges plus services' costs over type sets, given what is proven: its proven
    bound and the type set of its best solution (None when not solved)."""
    m = cp_model.CpModel()
    flags = {t: m.new_bool_var(t) for t in sorted(b.gpu_type_used)}
    total: list[cp_model.LinearExprT] = [b.gpu_type_charge_usd * sum(flags.values())]
    for name, k in known.items():
        top = max([k.floor, *k.costs.values()])
        cost = m.new_int_var(k.floor, top, name)
        for closed, least in sorted(k.costs.items(), key=lambda kv: sorted(kv[0])):
            m.add(cost >= least).only_enforce_if([~flags[t] for t in sorted(closed)])
        for closed in sorted(k.needs, key=sorted):
            m.add_bool_or([flags[t] for t in sorted(closed)])
        total.append(cost)
    for options in b.train.values():
        # every job runs on one of its options: one of their types is bought unless one is rented
        if all(owned_type(b, o) for o, _ in options):
            m.add_bool_or([flags[t] for t in sorted({o.pool.gpu for o, _ in options})])
    m.minimize(sum(total))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_deterministic_time = MASTER_DET_S
    status = solver.solve(m)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None, None
    return math.floor(solver.best_objective_bound), {t for t, f in flags.items() if solver.value(f)}
