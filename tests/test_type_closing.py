"""Closing GPU types for the consolidated start (optimize.type_closing): a type goes only when its
services lose less than its charge, every service still carries its demand, and with no charge
nothing closes."""

from __future__ import annotations

from ortools.sat.python import cp_model

from planner.optimize import type_closing
from planner.optimize.built import Built, Floor
from planner.optimize.floors import alone_model
from planner.optimize.type_floors import mix_types
from tests.test_consolidate import built  # noqa: F401  (the eight-service fleet, a fixture)


def _floors(b: Built) -> dict[str, Floor]:
    return {n: f for n, f in sorted(b.floors.items()) if f.found is not None}


def _total(b: Built, floors: dict[str, Floor], counts: dict[str, tuple[int, ...]]) -> int:
    """The services' GPUs at share prices (and rents), and a charge per owned type they use."""
    gpus = sum(type_closing._cost(floors[n], c) for n, c in counts.items())
    return gpus + b.gpu_type_charge_usd * len(_types(b, floors, counts))


def _types(b: Built, floors: dict[str, Floor], counts: dict[str, tuple[int, ...]]) -> set[str]:
    return set().union(*(mix_types(b, floors[n], c) for n, c in counts.items()))


def test_closing_never_costs_more_nor_opens_a_type(built: Built) -> None:  # noqa: F811
    floors = _floors(built)
    own = {n: f.found[1] for n, f in floors.items() if f.found is not None}
    charge = built.gpu_type_charge_usd
    assert charge > 0
    try:  # a charge this fleet's services cannot ignore: some type closes
        built.gpu_type_charge_usd = 50 * charge
        closed = type_closing.close_types(built, floors)
        assert _types(built, floors, closed) < _types(built, floors, own)
        assert _total(built, floors, closed) < _total(built, floors, own)
    finally:
        built.gpu_type_charge_usd = charge
    kept = type_closing.close_types(built, floors)
    assert _types(built, floors, kept) <= _types(built, floors, own)
    assert _total(built, floors, kept) <= _total(built, floors, own)


def test_with_no_charge_every_service_keeps_its_floor_mix(built: Built) -> None:  # noqa: F811
    floors = _floors(built)
    charge = built.gpu_type_charge_usd
    try:
        built.gpu_type_charge_usd = 0
        closed = type_closing.close_types(built, floors)
    finally:
        built.gpu_type_charge_usd = charge
    assert closed == {n: f.found[1] for n, f in floors.items() if f.found is not None}


def test_each_service_still_carries_its_demand(built: Built) -> None:  # noqa: F811
    floors = _floors(built)
    charge = built.gpu_type_charge_usd
    try:
        built.gpu_type_charge_usd = 50 * charge
        closed = type_closing.close_types(built, floors)
    finally:
        built.gpu_type_charge_usd = charge
    for name, counts in closed.items():
        alone, rs = alone_model(floors[name], name)  # the service's demand and spares, as in the model
        for r, n in zip(rs, counts, strict=True):
            alone.add(r == n)
        assert cp_model.CpSolver().solve(alone) == cp_model.OPTIMAL, name
