"""The training fabric's topology is a choice (issue 15): non-blocking fat tree, 2:1
oversubscribed and rail-optimised, each with its own switch and cable counts and its own
effect on training, offered as fabric ids (``ib-ndr``, ``ib-ndr-2to1``, ``ib-ndr-rail``)."""

from __future__ import annotations

import math
import textwrap

import pytest
from ortools.sat.python import cp_model

from planner.bom import PoolKey, pool_spec
from planner.catalog import Catalog, load_catalog
from planner.errors import InputError
from planner.fabric import max_ports, max_servers, network_for, rail_ports, rails_of, scaling_factor
from planner.finance import Rates
from planner.io.problem_io import loads_problem
from planner.optimize.built import Built, PoolVars
from planner.optimize.model import _network
from planner.options.training import estimate_job
from planner.perf.shapes import shape_of
from planner.pipeline import Context, plan_context, prepare
from planner.verify import verify
from tests.test_optimize_bruteforce import _price

CATALOG = load_catalog()
HGX = "hgx-hopper-8gpu"  # 8 NICs: 8 rails
PCIE = "pcie-8gpu-4u"  # 2 NICs: 2 rails
NVL72 = "gb200-nvl72"  # 72 NICs, 18 trays of 4: 4 rails of 18 ports


# ---------------------------------------------------------------- switch counts, by hand


def test_fat_tree_counts_are_unchanged() -> None:
    ib = CATALOG.fabrics["ib-ndr"]  # radix 64: one switch up to 64 ports, then 32 down / 32 up
    assert ib.topology == "fat-tree" and ib.topology_scaling == 1.0
    assert (network_for(ib, 64).leaves, network_for(ib, 64).spines, network_for(ib, 64).cables) == (1, 0, 64)
    n = network_for(ib, 512)  # 16 leaves of 32, 8 spines, 512 + 16 x 32 uplinks
    assert (n.leaves, n.spines, n.cables) == (16, 8, 1024)


def test_two_to_one_counts_by_hand() -> None:
    f = CATALOG.fabrics["ib-ndr-2to1"]  # k = 64 // 3 = 21: 42 ports down, 21 up
    n = network_for(f, 512)  # ceil(512 / 42) = 13 leaves; 13 x 21 = 273 uplinks on ceil(273 / 64) = 5 spines
    assert (n.leaves, n.spines, n.cables) == (13, 5, 512 + 273)
    small = network_for(f, 16)  # always two tiers: the one-switch network is the fat tree's
    assert (small.leaves, small.spines, small.cables) == (1, 1, 16 + 21)
    assert max_servers(f, CATALOG.servers[HGX]) == 64 * 42 // 8  # 64 leaves of 42 ports
    eth = network_for(CATALOG.fabrics["eth-100g-2to1"], 100)  # radix 32: 20 down, 10 up
    assert (eth.leaves, eth.spines, eth.cables) == (5, 2, 100 + 50)


def test_rail_optimised_counts_by_hand() -> None:
    f = CATALOG.fabrics["ib-ndr-rail"]
    hgx = CATALOG.servers[HGX]
    assert rails_of(hgx) == (8, 1)
    two = network_for(f, 16, rail_ports([(hgx, 2)]))  # a leaf per rail even for two servers
    assert (two.leaves, two.spines, two.cables) == (8, 4, 16 + 8 * 32)
    forty = network_for(f, 320, rail_ports([(hgx, 40)]))  # 40 servers: two leaves per rail
    assert (forty.leaves, forty.spines, forty.cables) == (16, 8, 320 + 16 * 32)
    # a DGX SuperPOD scalable unit: 32 servers, one leaf per rail: the fat tree's count
    su = network_for(f, 256, rail_ports([(hgx, 32)]))
    assert (su.leaves, su.spines) == (network_for(CATALOG.fabrics["ib-ndr"], 256).leaves, 4) == (8, 4)
    nvl = CATALOG.servers[NVL72]
    assert rails_of(nvl) == (4, 18)
    racks = network_for(f, 3 * 72, rail_ports([(nvl, 3)]))  # 54 ports per rail: 2 leaves each
    assert (racks.leaves, racks.spines, racks.cables) == (8, 4, 216 + 8 * 32)
    mixed = rail_ports([(hgx, 3), (CATALOG.servers[PCIE], 10)])  # rails 0-1 take the PCIe servers' 2 NICs
    assert mixed == [13, 13, 3, 3, 3, 3, 3, 3]
    assert network_for(f, sum(mixed), mixed).leaves == 8
    assert max_servers(f, hgx) == 256 and max_servers(f, nvl) == 16 * 32 // 18


# ---------------------------------------------------------------- the CP-SAT model agrees with network_for


def _cpsat_network(fid: str, pools: list[tuple[str, int]]) -> tuple[int, int, int]:
    """Leaves, spines and cables CP-SAT buys for fixed servers on one fabric, at the least
    switch and cable cost (the objective's network terms)."""
    problem = loads_problem(
        "name: n\nsite: {rack_units: 42, rack_power_kw: 40}\n"
        "training:\n  - {name: j, model: llama-3.1-8b, tokens: 1e9, deadline_days: 30}\n",
        "n.yaml",
    ).problem
    b = Built(cp_model.CpModel())
    for server, count in pools:
        chassis = CATALOG.servers[server]
        key = PoolKey(server, chassis.gpus[0], fid)
        n = b.model.new_int_var(count, count, f"servers[{server}]")
        b.pools[key] = PoolVars(pool_spec(CATALOG, key), n, b.model.new_int_var(0, 0, "r"), 1)
    _network(b, problem, CATALOG)
    f = b.fabrics[fid]
    fab = f.fabric
    assert fab.switch_price and fab.cable_price
    b.model.minimize(
        round(fab.switch_price.usd) * (f.leaves + f.spines) + round(fab.cable_price.usd) * (f.ports + f.uplinks)
    )
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    assert solver.solve(b.model) == cp_model.OPTIMAL
    ports = int(solver.value(f.ports))
    return solver.value(f.leaves), solver.value(f.spines), ports + solver.value(f.uplinks)


FLEETS = [[(HGX, n)] for n in (1, 2, 5, 8, 9, 13, 32, 33, 64, 100, 200, 256)]
FLEETS += [[(PCIE, n)] for n in (1, 16, 17, 40, 300)]
FLEETS += [[(NVL72, n)] for n in (1, 3, 9, 16)]
FLEETS += [[(HGX, 3), (PCIE, 10)], [(HGX, 20), (PCIE, 37)], [(HGX, 7), (NVL72, 2)]]


@pytest.mark.parametrize("topology", ["", "-2to1", "-rail"])
@pytest.mark.parametrize("base", ["ib-ndr", "eth-100g"])
def test_cpsat_network_equals_the_closed_form(base: str, topology: str) -> None:
    fid = base + topology
    fab = CATALOG.fabrics[fid]
    checked = 0
    for fleet in FLEETS:
        chassis = [(CATALOG.servers[s], n) for s, n in fleet]
        if fab.topology == "rail-optimised" and any(rails_of(c)[0] < 2 for c, _ in chassis):
            continue
        ports = sum(c.scaleout_nics * n for c, n in chassis)
        net = network_for(fab, ports, rail_ports(chassis))
        if net.leaves > fab.switch_radix or ports > max_ports(fab):
            continue  # beyond two tiers: the model refuses it (tested below)
        assert _cpsat_network(fid, fleet) == (net.leaves, net.spines, net.cables), (fid, fleet)
        checked += 1
    assert checked >= 15


def test_cpsat_refuses_a_rail_fabric_beyond_two_tiers() -> None:
    """2,000 ports fit two tiers of 64-port switches, but not on rails: 700 ports on each of
    rails 0-1 (22 leaves each) and 100 on rails 2-7 (4 each) make 68 leaves, more than a
    spine's 64 ports."""
    fleet = [(HGX, 100), (PCIE, 600)]
    assert (
        network_for(
            CATALOG.fabrics["ib-ndr-rail"], 2000, rail_ports([(CATALOG.servers[s], n) for s, n in fleet])
        ).leaves
        == 68
    )
    assert _cpsat_network("ib-ndr", fleet)[0] == 63  # the fat tree holds them
    with pytest.raises(AssertionError):
        _cpsat_network("ib-ndr-rail", fleet)


# ---------------------------------------------------------------- training scaling


def _days(fid: str, gpus: int, tokens: float = 1e11) -> float:
    job = loads_problem(
        f"name: s\ntraining:\n  - {{name: j, model: llama-3.1-70b, tokens: {tokens}, deadline_days: 999}}\n", "s.yaml"
    ).problem.training[0]
    chassis = CATALOG.servers[HGX]
    est = estimate_job(
        job, shape_of(job.model, CATALOG), CATALOG, chassis, CATALOG.gpus["H100-SXM"], CATALOG.fabrics[fid], gpus
    )
    assert est.fits
    return est.days


def test_a_topology_moves_a_jobs_speed_only_beyond_one_leaf_or_switch() -> None:
    ib = CATALOG.fabrics["ib-ndr"]
    two, rail = CATALOG.fabrics["ib-ndr-2to1"], CATALOG.fabrics["ib-ndr-rail"]
    assert scaling_factor(two, 42) == 1.0 and scaling_factor(two, 43) == 0.9  # one 2:1 leaf: 42 ports down
    assert scaling_factor(rail, 64) == 1.0 and scaling_factor(rail, 65) == 1.03  # one switch: 64 ports
    assert _days("ib-ndr-2to1", 40) == pytest.approx(_days("ib-ndr", 40))  # 40 ports: inside one 2:1 leaf
    assert _days("ib-ndr-2to1", 128) == pytest.approx(_days("ib-ndr", 128) / 0.9)
    # rail: 0.98 x 1.03 > 1, so the fabric's share is capped at 1
    assert _days("ib-ndr-rail", 128) == pytest.approx(_days("ib-ndr", 128) * ib.training_scaling)
    assert _days("ib-ndr-rail", 64) == pytest.approx(_days("ib-ndr", 64))


# ---------------------------------------------------------------- the optimiser chooses


def _problem(tokens: float, deadline_days: float) -> str:
    others = [f for f, fab in CATALOG.fabrics.items() if fab.kind != "none" and fab.base_id != "ib-ndr"]
    exclude = [g for g in CATALOG.gpus if g != "H100-SXM"] + others
    return textwrap.dedent(
        f"""
        name: topology
        horizon_years: 3
        site: {{racks: 80, rack_power_kw: 40, power_kw: 5000}}
        catalog:
          exclude: [{", ".join(exclude)}]
        policy:
          simplicity_tolerance: 0
        training:
          - name: big
            model: llama-3.1-405b
            tokens: {tokens}
            deadline_days: {deadline_days}
        """
    )


def _independent(ctx: Context) -> dict[str, float]:
    """Each topology's TCO with its option, priced apart from CP-SAT (the brute-force pricer)."""
    (w,) = ctx.workloads
    out = {}
    for o in w.training:
        tco = _price(ctx, {o.pool: o.held_gpus}, Rates.of(ctx.problem))  # hot spares are bought too
        assert tco is not None
        out[o.pool.fabric] = min(tco, out.get(o.pool.fabric, math.inf))
    return out


def _solve(text: str) -> tuple[Context, dict[str, float], str, float]:
    ctx = prepare(loads_problem(text, "topology.yaml"))
    expected = _independent(ctx)
    assert set(expected) == {"ib-ndr", "ib-ndr-2to1", "ib-ndr-rail"}
    plan = plan_context(ctx)
    assert plan.status == "optimal" and plan.verification == []
    (row,) = plan.training
    units = sum(r.quantity for r in plan.purchase)
    assert plan.tco_usd == pytest.approx(min(expected.values()), abs=units + 1)
    (net,) = plan.network
    assert net["fabric"] == row.fabric and net["topology"] == CATALOG.fabrics[row.fabric].topology
    switch = next(p for p in plan.purchase if p.sku == f"{row.fabric}:switch")
    assert CATALOG.fabrics[row.fabric].topology_name in switch.notes
    return ctx, expected, row.fabric, plan.tco_usd


def _tokens_for(gpus: int, deadline_days: float, share: float) -> float:
    """Tokens the 405B job trains on ``gpus`` fat-tree GPUs in ``share`` of the deadline."""
    return 1e11 * deadline_days * share / _days_405b("ib-ndr", gpus, 1e11)


def _days_405b(fid: str, gpus: int, tokens: float) -> float:
    job = loads_problem(
        f"name: s\ntraining:\n  - {{name: j, model: llama-3.1-405b, tokens: {tokens}, deadline_days: 999}}\n", "s.yaml"
    ).problem.training[0]
    est = estimate_job(
        job,
        shape_of(job.model, CATALOG),
        CATALOG,
        CATALOG.servers[HGX],
        CATALOG.gpus["H100-SXM"],
        CATALOG.fabrics[fid],
        gpus,
    )
    return est.days


def test_two_to_one_wins_when_memory_sets_the_size_and_the_deadline_is_loose() -> None:
    """405B needs 12 servers by memory; 60 days is loose enough for the 10% slower 2:1 fabric at
    that size, whose 96 ports take 3 leaves and 1 spine (the fat tree: 3 and 2, 33 more links)."""
    ctx, expected, chosen, _ = _solve(_problem(2e9, 60))
    gpus = {o.pool.fabric: o.gpus for o in ctx.workloads[0].training}
    assert gpus == {"ib-ndr": 96, "ib-ndr-2to1": 96, "ib-ndr-rail": 96}
    assert chosen == "ib-ndr-2to1" == min(expected, key=lambda f: expected[f])


def test_rail_saves_a_server_and_the_cheaper_wiring_is_chosen() -> None:
    """The fat tree needs 33 servers (264 GPUs); rail's gain makes 32; 2:1 needs more. Each also
    holds a hot-spare server. Rail's leaf per NIC rail can cost more than the server it saves:
    the plan takes whichever the independent pricer finds cheaper."""
    tokens = _tokens_for(256, 40, 1.01)  # the fat tree's 256 GPUs are 1% late
    ctx, expected, chosen, _ = _solve(_problem(tokens, 40))
    gpus = {o.pool.fabric: o.gpus for o in ctx.workloads[0].training}
    assert gpus["ib-ndr"] == 264 and gpus["ib-ndr-rail"] == 256 and gpus["ib-ndr-2to1"] > 264
    assert chosen == min(expected, key=lambda f: expected[f])


def test_fat_tree_wins_a_tight_deadline_at_twenty_servers() -> None:
    """20 servers on either the fat tree or rail (5 leaves + 3 spines against 8 + 4); 2:1 needs 22."""
    tokens = _tokens_for(160, 40, 0.975)
    ctx, expected, chosen, _ = _solve(_problem(tokens, 40))
    gpus = {o.pool.fabric: o.gpus for o in ctx.workloads[0].training}
    assert gpus["ib-ndr"] == gpus["ib-ndr-rail"] == 160 and gpus["ib-ndr-2to1"] >= 176
    assert chosen == "ib-ndr" == min(expected, key=lambda f: expected[f])


def test_a_job_one_switch_holds_gets_the_fat_tree_only() -> None:
    """70B fits 2 servers (its memory minimum) in time on the fat tree: one switch holds it, so the
    2:1 and rail wirings (offered beyond one switch, 9 servers and up) are not offered."""
    small = _problem(2e9, 60).replace("llama-3.1-405b", "llama-3.1-70b")
    (w,) = prepare(loads_problem(small, "s.yaml")).workloads
    assert {(o.pool.fabric, o.gpus) for o in w.training} == {("ib-ndr", 16)}


# ---------------------------------------------------------------- exclusion, the verifier


def test_a_problem_can_exclude_a_topology_or_one_wiring() -> None:
    base = _problem(2e9, 60)
    ctx = prepare(loads_problem(base.replace("exclude: [", "exclude: [oversubscribed-2to1, ib-ndr-rail, "), "x.yaml"))
    assert {o.pool.fabric for o in ctx.workloads[0].training} == {"ib-ndr"}
    assert not any(f.topology == "oversubscribed-2to1" for f in ctx.catalog.fabrics.values())
    with pytest.raises(InputError) as err:
        prepare(loads_problem(base.replace("exclude: [", "exclude: [rail-optimized, "), "x.yaml"))
    assert "rail-optimised" in str(err.value.hint)


def test_the_verifier_catches_a_switch_count_that_disagrees() -> None:
    ctx = prepare(loads_problem(_problem(2e9, 60), "v.yaml"))
    plan = plan_context(ctx)
    assert plan.network[0]["fabric"] == "ib-ndr-2to1" and verify(ctx.problem, ctx.catalog, plan) == []
    for key, delta in (("spines", -1), ("leaves", -1), ("cables", -21)):
        broken = plan.model_copy(deep=True)
        broken.network[0][key] += delta
        errs = verify(ctx.problem, ctx.catalog, broken)
        assert any("96 ports need 3 leaves and 1 spines and 159 cables (2:1 oversubscribed" in e for e in errs), errs


def test_the_catalog_offers_every_wiring_of_every_scale_out_fabric(catalog: Catalog) -> None:
    bases = {f.base_id for f in catalog.fabrics.values() if f.kind != "none"}
    for base in bases:
        wired = {f.topology: f.id for f in catalog.fabrics.values() if f.base_id == base}
        assert wired == {"fat-tree": base, "oversubscribed-2to1": f"{base}-2to1", "rail-optimised": f"{base}-rail"}
    for f in catalog.fabrics.values():
        if f.kind != "none":
            assert f.topology_source is not None and f.topology_source.date
