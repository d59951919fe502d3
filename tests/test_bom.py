"""Network and rack sizing rules."""

from __future__ import annotations

from planner.bom import per_rack, racks_needed
from planner.fabric import max_ports, network_for


def test_one_switch_while_ports_fit(catalog):
    ib = catalog.fabrics["ib-ndr"]
    n = network_for(ib, 64)
    assert (n.leaves, n.spines, n.cables) == (1, 0, 64)


def test_leaf_spine_beyond_one_switch(catalog):
    ib = catalog.fabrics["ib-ndr"]  # radix 64: leaves take 32 hosts, 32 uplinks
    n = network_for(ib, 65)
    assert (n.leaves, n.spines) == (3, 2)
    assert n.cables == 65 + 3 * 32
    big = network_for(ib, 1024)
    assert (big.leaves, big.spines) == (32, 16)
    assert max_ports(ib) == 64 * 32


def test_rack_fit_by_units_and_power():
    assert per_rack(8, 10_000, 42, 17) == 1  # power-bound
    assert per_rack(2, 1_000, 42, 17) == 17  # power-bound: 17 x 1 kW
    assert per_rack(4, 500, 42, 40) == 10  # unit-bound
    assert per_rack(48, 1_000, 42, 100) == 0
    assert racks_needed(0, 3) == 0 and racks_needed(7, 3) == 3


def test_a_desk_side_workstation_buys_no_rack() -> None:
    """Workstation and edge chassis stand outside racks: no rack line, no rack limits."""
    from pathlib import Path

    from planner.io.problem_io import load_problem
    from planner.pipeline import plan_problem

    plan = plan_problem(load_problem(Path(__file__).resolve().parent.parent / "problems" / "qlora-workstation.yaml"))
    assert plan.status == "optimal" and plan.verification == []
    assert {s.server for s in plan.servers} == {"workstation-2gpu"}
    assert plan.racks == 0 and plan.rack_units == 0
    assert not [p for p in plan.purchase if p.category == "rack"]
    assert plan.tco_breakdown_usd.get("racks", 0) == 0
