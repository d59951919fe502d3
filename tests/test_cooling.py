"""Cooling: air-cooled racks hold no more than air can shed, liquid-cooled chassis need a site
that has liquid and pay for it per kW (and run at the liquid PUE), the site's own racks are
free. Each checked by hand from the catalog's figures."""

from __future__ import annotations

import math

import pytest

from planner.catalog import load_catalog
from planner.finance import Rates
from planner.io.problem_io import loads_problem
from planner.pipeline import plan_problem
from tests.conftest import PROBLEMS, example_plan

CATALOG = load_catalog()


def _problem(gpu: str, site: str, rps: float = 40) -> str:
    exclude = ", ".join(g for g in CATALOG.gpus if g != gpu)
    return f"""
name: cooling
horizon_years: 3
catalog:
  exclude: [{exclude}]
site:
{site}
inference:
  - name: chat
    model: llama-3.1-70b
    precisions: [fp8]
    requests_per_s: {rps}
    ttft_ms: 3000
    tpot_ms: 60
    disaggregation: never  # one pool of racks: the rack power rule, not a second (fabric) pool
"""


def _solve(text: str):
    return plan_problem(loads_problem(text, "cooling.yaml"))


def _server_kw(server: str, gpu: str, fabric: str = "none") -> float:
    chassis, g, f = CATALOG.servers[server], CATALOG.gpus[gpu], CATALOG.fabrics[fabric]
    nics = chassis.scaleout_nics if f.kind != "none" else 0
    return (chassis.base_power_w + chassis.gpus_per_server * g.tdp_w + nics * f.nic_power_w) / 1000


def test_an_air_cooled_rack_holds_no_more_than_air_can_shed() -> None:
    capped = _solve(_problem("B200", "  rack_power_kw: 60\n  rack_units: 42", rps=250))
    loose = _solve(_problem("B200", "  rack_power_kw: 60\n  rack_units: 42\n  air_rack_power_kw: 60", rps=250))
    for plan, cap_kw in ((capped, 40.0), (loose, 60.0)):
        assert plan.status == "optimal" and plan.verification == []
        (row,) = plan.servers
        kw = _server_kw(row.server, row.gpu, row.fabric)
        fit = min(42 // CATALOG.servers[row.server].rack_units, math.floor(cap_kw / kw))
        assert row.racks == math.ceil(row.count / fit)
        assert plan.max_air_rack_power_kw <= cap_kw
        assert plan.max_air_rack_power_kw == pytest.approx(min(row.count, fit) * kw, abs=1e-3)
    assert capped.servers[0].count >= 3  # enough servers that the cap costs racks
    assert capped.racks > loose.racks
    (row,) = [c for c in capped.constraints if c.name == "air_rack_power"]
    assert row.used == pytest.approx(capped.max_air_rack_power_kw) and row.limit == 40


def test_a_liquid_cooled_chassis_needs_a_site_with_liquid() -> None:
    air = _solve(_problem("MI355X", "  cooling: air\n  rack_power_kw: 60"))
    assert air.status == "infeasible"
    text = " ".join(air.diagnosis.summary if air.diagnosis else [])
    assert "liquid" in text, text


def test_liquid_cooling_is_priced_per_kw_and_runs_at_the_liquid_pue() -> None:
    plan = _solve(_problem("MI355X", "  cooling: both\n  rack_power_kw: 60", rps=10))
    assert plan.status == "optimal" and plan.verification == []
    (row,) = plan.servers
    kw = _server_kw(row.server, row.gpu, row.fabric)
    per_kw = CATALOG.liquid_cooling.price_usd_per_kw.usd
    (line,) = [p for p in plan.purchase if p.category == "cooling"]
    assert line.quantity == row.count and line.unit_price_usd == round(kw * per_kw)
    # facility power: liquid racks at the catalog's liquid PUE (1.15), not finance.pue (1.35); the
    # front-end switches are air-cooled
    fe = CATALOG.frontend
    air_kw = (
        plan.frontend["switches"] * fe.switch_power_w + plan.frontend["mgmt_switches"] * fe.mgmt_switch_power_w
    ) / 1000
    expected_kw = row.count * kw * CATALOG.liquid_cooling.pue + air_kw * 1.35
    assert plan.facility_power_kw == pytest.approx(expected_kw, abs=0.01)
    rates = Rates.of(loads_problem(_problem("MI355X", "  rack_power_kw: 60", rps=10), "c.yaml").problem)
    energy = row.count * rates.energy_usd_per_year(kw * 1000, CATALOG.liquid_cooling.pue) * rates.annuity
    energy += rates.energy_usd_per_year(air_kw * 1000) * rates.annuity  # the switches, at finance.pue
    assert plan.tco_breakdown_usd["energy"] == pytest.approx(energy, rel=1e-6)
    assert plan.tco_breakdown_usd["cooling"] == pytest.approx(line.extended_price_usd, abs=0.01)


def test_the_sites_existing_racks_are_free() -> None:
    base = _solve(_problem("B200", "  rack_power_kw: 40", rps=10))
    owned = _solve(_problem("B200", "  rack_power_kw: 40\n  existing_racks: 1", rps=10))
    assert base.verification == [] and owned.verification == []
    assert base.servers[0].count == owned.servers[0].count and base.racks == owned.racks >= 1
    rack_usd = round(CATALOG.rack.price.usd)
    assert base.capex_usd - owned.capex_usd == pytest.approx(rack_usd, abs=0.01)
    assert base.tco_usd - owned.tco_usd == pytest.approx(rack_usd, abs=0.01)  # racks have no running cost
    bought = sum(p.quantity for p in owned.purchase if p.category == "rack")
    assert bought == owned.racks - 1


@pytest.mark.parametrize("name", sorted(p.name for p in PROBLEMS.glob("*.yaml") if "infeasible" not in p.name))
def test_no_example_packs_an_air_rack_past_its_cap(name: str) -> None:
    plan = example_plan(name)
    site = loads_problem((PROBLEMS / name).read_text(), name).problem.site
    assert plan.max_air_rack_power_kw <= min(site.rack_power_kw, site.air_rack_power_kw) + 1e-9
    assert plan.verification == []


def test_the_verifier_recomputes_the_air_rack_row() -> None:
    plan = example_plan("startup.yaml").model_copy(deep=True)
    (row,) = [c for c in plan.constraints if c.name == "air_rack_power"]
    row.used += 5
    problem = loads_problem((PROBLEMS / "startup.yaml").read_text(), "startup.yaml").problem
    from planner.verify import verify

    errors = verify(problem, CATALOG, plan)
    assert any(e.startswith("air_rack_power: the limits report says") for e in errors), errors
