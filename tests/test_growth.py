"""Plans by year: demand that grows, prices that fall, hardware that retires, stock per year."""

from __future__ import annotations

import pytest

from planner.catalog import load_catalog
from planner.io.problem_io import loads_problem
from planner.verify import verify
from tests.conftest import solve_text

KEEP = ["L40S", "H100-SXM"]


def _growth(
    purchases: str = "yearly", extra: str = "", rates: str = "[10, 20, 40]", horizon: int = 3, stock: str = "{}"
) -> str:
    exclude = ", ".join(g for g in load_catalog().gpus if g not in KEEP)
    return f"""
name: growth
horizon_years: {horizon}
catalog:
  exclude: [{exclude}]
  price_decline_per_year: {{default: 0.15}}
  stock: {stock}
policy:
  purchases: {purchases}
{extra}
inference:
  - name: chat
    model: llama-3.1-8b
    precisions: [fp8]
    requests_per_s_by_year: {rates}
    input_tokens: 1000
    output_tokens: 250
    ttft_ms: 1000
    tpot_ms: 40
    disaggregation: never  # one L40S prefill + one decode serve all three years' demand: no phasing left to test
"""


@pytest.fixture(scope="module")
def phased():
    return solve_text(_growth())


def test_phased_purchases_beat_buying_everything_in_year_one(phased):
    upfront = solve_text(_growth("upfront"))
    assert phased.status == upfront.status == "optimal"
    assert phased.verification == [] and upfront.verification == []
    assert len({r.year for r in phased.servers}) > 1  # bought in more than one year
    assert {r.year for r in upfront.servers} == {0}
    assert phased.tco_usd < upfront.tco_usd


def test_every_year_is_served_and_cash_flows_carry_each_years_purchases(phased):
    rates = [10, 20, 40]
    assert [(r.year, r.required_rps) for r in phased.inference] == [(1, 10), (2, 20), (3, 40)]
    for row in phased.inference:
        assert row.capacity_rps >= row.required_rps
    by_year = {}
    for item in phased.purchase:
        by_year[item.year] = by_year.get(item.year, 0.0) + item.extended_price_usd
    for flow in phased.cash_flows:
        assert flow.capex_usd == pytest.approx(by_year.get(flow.year, 0.0))
    assert sum(f.present_value_usd for f in phased.cash_flows) == pytest.approx(phased.tco_usd, abs=0.05)
    assert len(rates) == len(phased.inference)


def test_later_servers_cost_the_declined_gpu_price(phased):
    catalog = load_catalog()
    for row in phased.servers:
        chassis = catalog.servers[row.server]
        by_hand = chassis.base_price.usd + chassis.gpus_per_server * catalog.gpus[row.gpu].price.usd * 0.85**row.year
        assert row.unit_price_usd == pytest.approx(round(by_hand))


def test_verifier_checks_each_years_capacity_against_that_years_demand(phased):
    problem = loads_problem(_growth()).problem
    catalog = load_catalog().restricted(problem.catalog.exclude, None, {}, {})
    last = max(r.year for r in phased.servers)
    short = phased.model_copy(deep=True)
    short.servers = [r for r in short.servers if r.year != last]
    errors = verify(problem, catalog, short)
    assert any(f"year {last + 1}" in e for e in errors), errors


def test_hardware_that_retires_is_bought_again():
    plan = solve_text(_growth(extra="finance:\n  hardware_lifetime_years: 2", rates="[10, 10, 10, 10]", horizon=4))
    assert plan.status == "optimal" and plan.verification == []
    years = sorted({r.year for r in plan.servers})
    assert years == [0, 2]  # the year-0 servers retire after two years of service
    first = sum(r.count for r in plan.servers if r.year == 0)
    assert sum(r.count for r in plan.servers if r.year == 2) == first


def test_stock_is_per_year():
    free = solve_text(_growth())
    gpu = max(free.gpus, key=free.gpus.get)
    most = max(sum(r.count * r.gpus_per_server for r in free.servers if r.gpu == gpu and r.year == y) for y in range(3))
    cap = most // 2
    capped = solve_text(_growth(stock=f"{{{gpu}: {cap}}}"))
    assert capped.status == "optimal" and capped.verification == []
    for year in range(3):
        assert sum(r.count * r.gpus_per_server for r in capped.servers if r.gpu == gpu and r.year == year) <= cap
    assert capped.tco_usd >= free.tco_usd
    row = next(c for c in capped.constraints if c.name == f"stock:{gpu}")
    assert row.path == f"catalog.stock.{gpu}" and row.used <= cap


def test_minimum_spare_capacity_share():
    plan = solve_text(
        _growth(rates="[10, 10, 10]", purchases="upfront").replace(
            "tpot_ms: 40", "tpot_ms: 40\n    min_spare_share: 0.5"
        )
    )
    assert plan.inference[0].capacity_rps >= 15 - 1e-9
    assert plan.verification == []
