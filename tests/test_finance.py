"""TCO arithmetic pinned by hand calculation, including the discounting convention."""

from __future__ import annotations

import pytest

from planner.finance import LineItem, Rates, summarize


def _rates(**kw) -> Rates:
    base = dict(
        horizon_years=3,
        discount_rate=0.08,
        electricity_usd_per_kwh=0.12,
        pue=1.35,
        colocation_usd_per_kw_month=0.0,
        maintenance_rate=0.05,
        utilization=0.7,
    )
    return Rates(**{**base, **kw})


def test_year_one_opex_is_discounted_once():
    r = _rates()
    assert r.discount_factor(0) == 1.0
    assert r.discount_factor(1) == pytest.approx(1 / 1.08)
    # NPV of 1 USD at the end of years 1..3 at 8%
    assert r.annuity == pytest.approx(1 / 1.08 + 1 / 1.08**2 + 1 / 1.08**3)
    assert r.annuity == pytest.approx(2.577097, rel=1e-6)


def test_energy_colocation_maintenance_per_year():
    r = _rates(colocation_usd_per_kw_month=150.0)
    # 10 kW nameplate x 0.7 x 8760 h x $0.12 x 1.35 PUE
    assert r.energy_usd_per_year(10_000) == pytest.approx(10 * 0.7 * 8760 * 0.12 * 1.35) == pytest.approx(9933.84)
    assert r.colocation_usd_per_year(10_000) == pytest.approx(10 * 150 * 12)
    assert r.maintenance_usd_per_year(200_000, "server") == pytest.approx(10_000)
    assert r.maintenance_usd_per_year(6_000, "rack") == 0.0


def test_plan_money_adds_up_by_hand():
    r = _rates()
    items = [
        LineItem("server", "8x GPU server", "s", 2, 250_000.0, 10_000.0),
        LineItem("network", "switch", "sw", 1, 30_000.0, 1_000.0),
        LineItem("rack", "rack", "rack", 2, 6_000.0, 0.0),
    ]
    m = summarize(items, r)
    capex = 2 * 250_000 + 30_000 + 2 * 6_000
    energy = (21_000 / 1000) * 0.7 * 8760 * 0.12 * 1.35
    maintenance = 0.05 * (500_000 + 30_000)
    opex = energy + maintenance
    assert m.capex_usd == capex
    assert m.opex_usd_per_year == pytest.approx(opex)
    npv = capex + opex / 1.08 + opex / 1.08**2 + opex / 1.08**3
    assert m.tco_usd == pytest.approx(npv)
    assert [f.year for f in m.cash_flows] == [0, 1, 2, 3]
    assert sum(f.present_value_usd for f in m.cash_flows) == pytest.approx(m.tco_usd)
    assert sum(m.breakdown_usd.values()) == pytest.approx(m.tco_usd)
    assert m.breakdown_usd["energy"] == pytest.approx(energy * r.annuity)


def test_unit_tco_matches_summarize_for_one_unit():
    r = _rates(horizon_years=5, discount_rate=0.1, colocation_usd_per_kw_month=100)
    unit = r.unit_tco_usd(100_000, 5_000, "server")
    m = summarize([LineItem("server", "x", "x", 1, 100_000, 5_000)], r)
    assert unit == pytest.approx(m.tco_usd)


def test_zero_discount_rate_is_plain_sum():
    r = _rates(discount_rate=0.0, horizon_years=4)
    assert r.annuity == 4.0


def test_operations_and_residual_value_by_hand():
    r = _rates(
        ops_usd_per_server_year=2_000.0, residual_value_share=0.2, maintenance_rate=0.0, electricity_usd_per_kwh=0.0
    )
    items = [
        LineItem("server", "s", "s", 3, 100_000.0, 5_000.0),
        LineItem("rack", "r", "r", 1, 6_000.0, 0.0),
    ]
    m = summarize(items, r)
    capex = 306_000
    ops = 3 * 2_000
    resale = 0.2 * 300_000  # servers only: racks are not resold
    npv = capex + ops * r.annuity - resale / 1.08**3
    assert m.tco_usd == pytest.approx(npv)
    last = m.cash_flows[-1]
    assert last.residual_usd == pytest.approx(resale)
    assert last.present_value_usd == pytest.approx((ops - resale) / 1.08**3)
    # straight-line depreciation of capex less residual, every year of the horizon
    assert [f.depreciation_usd for f in m.cash_flows[1:]] == pytest.approx([(capex - resale) / 3] * 3)
    assert m.breakdown_usd["residual"] == pytest.approx(-resale / 1.08**3)
    assert sum(m.breakdown_usd.values()) == pytest.approx(m.tco_usd)
    # the optimiser's unit cost agrees with the plan's money
    unit = r.unit_tco_usd(100_000, 5_000, "server") * 3 + r.unit_tco_usd(6_000, 0, "rack")
    assert unit == pytest.approx(m.tco_usd)
