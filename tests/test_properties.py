"""Monotone facts every plan must respect, checked on generated problems.

More budget never raises TCO; more demand never lowers it; dearer electricity
never lowers it. Unit costs enter CP-SAT in whole dollars, so comparisons allow
one dollar per item bought.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.catalog import load_catalog
from tests.conftest import solve_text

KEEP = ["L4", "L40S", "A10", "H100-SXM", "MI300X", "RTX-4090"]
ALL = list(load_catalog().gpus)
SETTINGS = settings(max_examples=8, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


def _problem(rps: float, budget: float | None, price_kwh: float, tokens: float, power_kw: float | None) -> str:
    exclude = ", ".join(g for g in ALL if g not in KEEP)
    budget_line = f"budget_usd: {budget}" if budget else ""
    power_line = f"power_kw: {power_kw}" if power_kw else ""
    return f"""
name: prop
finance:
  electricity_usd_per_kwh: {price_kwh}
  {budget_line}
site:
  {power_line}
  racks: 6
catalog:
  exclude: [{exclude}]
training:
  - name: tune
    model: llama-3.1-8b
    method: lora
    tokens: {tokens}
    deadline_days: 10
inference:
  - name: chat
    model: llama-3.1-8b
    precisions: [fp8, int4, bf16]
    requests_per_s: {rps}
    input_tokens: 1024
    output_tokens: 256
    tpot_ms: 60
    ttft_ms: 1500
    spare_replicas: 1
"""


def _tol(plan) -> float:
    return sum(r.quantity for r in plan.purchase) + 1.0


rps_s = st.sampled_from([1.0, 4.0, 9.0, 20.0, 45.0])
tokens_s = st.sampled_from([1e8, 1e9, 5e9])
power_s = st.sampled_from([None, 15.0, 40.0])
price_s = st.sampled_from([0.05, 0.12, 0.25])


@SETTINGS
@given(
    rps=rps_s,
    tokens=tokens_s,
    power=power_s,
    budget=st.sampled_from([60_000, 150_000, 400_000]),
    extra=st.sampled_from([20_000, 100_000, 1_000_000]),
)
def test_more_budget_never_raises_tco(rps, tokens, power, budget, extra):
    base = solve_text(_problem(rps, budget, 0.12, tokens, power))
    more = solve_text(_problem(rps, budget + extra, 0.12, tokens, power))
    if base.status != "infeasible":
        assert more.status != "infeasible"
        assert more.tco_usd <= base.tco_usd + _tol(base)


@SETTINGS
@given(rps=rps_s, tokens=tokens_s, power=power_s, factor=st.sampled_from([1.3, 2.0, 4.0]))
def test_more_demand_never_lowers_tco(rps, tokens, power, factor):
    base = solve_text(_problem(rps, None, 0.12, tokens, power))
    more = solve_text(_problem(rps * factor, None, 0.12, tokens, power))
    if more.status != "infeasible":
        assert base.status != "infeasible"
        assert more.tco_usd >= base.tco_usd - _tol(more)


@SETTINGS
@given(rps=rps_s, tokens=tokens_s, price=price_s, bump=st.sampled_from([0.01, 0.1, 0.5]))
def test_dearer_electricity_never_lowers_tco(rps, tokens, price, bump):
    base = solve_text(_problem(rps, None, price, tokens, None))
    dear = solve_text(_problem(rps, None, price + bump, tokens, None))
    assert base.status == dear.status == "optimal"
    assert dear.tco_usd >= base.tco_usd - _tol(dear)


def test_same_problem_same_plan():
    text = _problem(20.0, 400_000, 0.12, 1e9, 40.0)
    a, b = solve_text(text), solve_text(text)
    assert a.model_dump(exclude={"solve_seconds"}) == b.model_dump(exclude={"solve_seconds"})
