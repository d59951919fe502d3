"""Buy versus rent: rented capacity priced by the hour, mixed with owned capacity when cheaper."""

from __future__ import annotations

import math

import pytest

from planner.catalog import load_catalog
from planner.finance import Rates
from tests.conftest import solve_text

KEEP = ["H100-SXM", "L40S", "L4", "B200"]
TEXT = """
name: rent
horizon_years: 3
finance:
  rent: {rent}
catalog:
  exclude: [{exclude}]
  {quote}
training:
  - name: burst
    model: llama-3.1-8b
    tokens: 2.0e10
    deadline_days: 20
inference:
  - name: chat
    model: llama-3.1-8b
    precisions: [fp8]
    requests_per_s: 30
    tpot_ms: 60
    ttft_ms: 1500
"""


def _text(rent="on_demand", quote=""):
    exclude = ", ".join(g for g in load_catalog().gpus if g not in KEEP)
    return TEXT.format(rent=rent, exclude=exclude, quote=quote)


def test_renting_never_costs_more_than_buying_only():
    buy = solve_text(_text(rent="none"))
    mixed = solve_text(_text())
    assert mixed.tco_usd <= buy.tco_usd + 1
    assert mixed.verification == [] and buy.verification == []
    assert not any(t.rented for t in buy.training)


def test_a_short_job_is_rented_and_priced_by_the_hour():
    plan = solve_text(_text())
    job = plan.training[0]
    assert job.rented  # a 20-day burst on GPUs bought for 3 years costs more than renting them
    price = load_catalog().rent_usd_per_gpu_hour(job.gpu, "on_demand")
    hand = job.gpus * math.ceil(job.days * 24) * price / 1.08  # paid by the end of year 1
    assert job.cost_usd == pytest.approx(hand, rel=1e-3)
    assert plan.tco_breakdown_usd["rent"] >= hand - 1
    assert sum(f.present_value_usd for f in plan.cash_flows) == pytest.approx(plan.tco_usd, abs=0.05)


def test_a_quoted_rent_wins_over_the_catalog():
    cheap = solve_text(_text(quote="rent_usd_per_gpu_hour: {L4: 0.01}"))
    rented = [r for r in cheap.inference[0].replicas if r.rented]
    assert rented and all(r.gpu == "L4" and r.rent_usd_per_gpu_hour == 0.01 for r in rented)


def test_break_even_utilisation_balances_owning_and_renting():
    plan = solve_text(_text(rent="none"))
    rates = Rates.of(__import__("planner.io.problem_io", fromlist=["x"]).loads_problem(_text(rent="none")).problem)
    assert plan.rent_vs_buy
    for row in plan.rent_vs_buy.values():
        u = row["break_even_utilization_on_demand"]
        rent_at_u = u * 8760 * row["on_demand_usd_per_gpu_hour"] * rates.annuity
        assert rent_at_u == pytest.approx(row["own_usd_per_gpu"], rel=1e-2)
