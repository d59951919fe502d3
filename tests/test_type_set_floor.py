"""The services' and GPU types' joint floor (optimize.type_set_floor) against every type set
enumerated, on the eight-service fleet of tests/test_consolidate.py."""

from __future__ import annotations

import itertools

from ortools.sat.python import cp_model

from planner.optimize.built import Built, upper
from planner.optimize.floors import alone_model, service_floor
from planner.optimize.type_floors import mix_types, owned_type
from tests.test_consolidate import built  # noqa: F401  (the fixture)

LIMIT_S = 5.0  # each service alone on a type set: proven optimal well within it


def _on(b: Built, types: frozenset[str]) -> int | None:
    """Each service's proven least cost on ``types`` alone, summed with the types' charges."""
    total = b.gpu_type_charge_usd * len(types)
    for name, f in sorted(b.floors.items()):
        uppers = [0 if owned_type(b, o) and o.pool.gpu not in types else upper(r) for o, r in f.reps]
        found = service_floor(f, name, uppers, LIMIT_S) if any(uppers) else None
        if found is None:
            return None
        total += found[0]
    return total


def test_the_floor_is_the_least_over_every_type_set(built: Built) -> None:  # noqa: F811
    ts = built.type_set
    assert ts is not None
    owned = sorted(built.gpu_type_used)
    assert len(owned) == 3
    costs = {
        frozenset(t): c
        for n in range(len(owned) + 1)
        for t in itertools.combinations(owned, n)
        if (c := _on(built, frozenset(t))) is not None
    }
    least = min(costs.values())
    assert ts.floor_usd == least
    assert costs[ts.types] == least
    # not every type set is as cheap: the floor says more than any one set's charges alone
    assert max(costs.values()) > least
    assert any(c.name == "services:type_set_floor" for c in built.model.proto.constraints)


def test_each_mix_on_the_type_set_uses_its_types_and_serves(built: Built) -> None:  # noqa: F811
    ts = built.type_set
    assert ts is not None
    assert set(ts.mixes) == set(built.floors)
    for name, counts in ts.mixes.items():
        f = built.floors[name]
        assert mix_types(built, f, counts) <= ts.types
        alone, rs = alone_model(f, name, list(counts))  # the service's own demand and spares
        alone.add(sum(rs) == sum(counts))  # at its counts (each at most its own)
        assert cp_model.CpSolver().solve(alone) in (cp_model.OPTIMAL, cp_model.FEASIBLE), name
        assert sum(c * n for c, n in zip(f.costs, counts, strict=True)) >= f.found[0]  # type: ignore[index]
