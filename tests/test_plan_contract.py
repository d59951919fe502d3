"""The plan honours the contract: its keys, its sums, and the problem's policy keys."""

from __future__ import annotations

import csv
import io
import json

import pytest

from planner.catalog import load_catalog
from planner.report.tables import PURCHASE_COLUMNS, plan_json, purchase_csv
from tests.conftest import solve_text

SMALL = """
name: small
finance:
  budget_usd: 2000000
site:
  power_kw: 100
  racks: 4
catalog:
  exclude: [{exclude}]
{catalog_extra}
{extra}
inference:
  - name: chat
    model: llama-3.1-8b
    precisions: [fp8, int4, bf16]
    requests_per_s: {rps}
    tpot_ms: 60
    ttft_ms: 1500
    spare_replicas: {spare}
    {growth}
training:
  - name: tune
    model: llama-2-7b
    method: lora
    tokens: 1.0e9
    deadline_days: 10
"""
KEEP = ["H100-SXM", "H200-SXM", "A100-SXM-80GB", "L40S", "L4", "A10", "RTX-4090", "MI300X"]
OTHERS = [g for g in load_catalog().gpus if g not in KEEP]


def _small(rps=10.0, spare=0, growth="", extra="", exclude=(), catalog_extra=""):
    return SMALL.format(
        rps=rps,
        spare=spare,
        growth=growth,
        extra=extra,
        catalog_extra=catalog_extra,
        exclude=", ".join([*OTHERS, *exclude]),
    )


@pytest.fixture(scope="module")
def plan():
    return solve_text(_small(spare=1))


def test_plan_json_has_the_contract_keys(plan):
    data = json.loads(plan_json(plan))
    for key in (
        "schema_version",
        "problem",
        "status",
        "gap",
        "tco_usd",
        "capex_usd",
        "opex_usd_per_year",
        "tco_breakdown_usd",
        "it_power_kw",
        "facility_power_kw",
        "racks",
        "rack_units",
        "servers",
        "training",
        "inference",
        "constraints",
        "purchase",
        "cash_flows",
        "assumptions",
    ):
        assert key in data, key
    assert set(data["tco_breakdown_usd"]) >= {"servers", "network", "racks", "energy", "colocation", "maintenance"}
    assert data["status"] == "optimal" and data["gap"] == 0
    for row in data["servers"]:
        assert {"server", "gpu", "gpus_per_server", "fabric", "count"} <= set(row)
    for row in data["training"]:
        assert {"name", "gpu", "gpus", "fabric", "days", "start_day", "deadline_days"} <= set(row)
    for row in data["inference"]:
        assert {"name", "required_rps", "capacity_rps", "replicas"} <= set(row)
        for rep in row["replicas"]:
            assert {"gpu", "gpus_per_replica", "precision", "count", "rps_per_replica", "ttft_ms", "tpot_ms"} <= set(
                rep
            )
    names = {c["name"] for c in data["constraints"]}
    assert {
        "budget",
        "site_power",
        "racks",
        "rack_power",
        "job:tune:deadline",
        "service:chat:rate",
        "service:chat:ttft",
        "service:chat:tpot",
    } <= names
    for c in data["constraints"]:
        assert {"name", "path", "limit", "used", "slack", "unit", "binding", "step", "marginal_usd"} <= set(c)
    years = [f["year"] for f in data["cash_flows"]]
    assert years == list(range(0, 4))
    assert sum(f["present_value_usd"] for f in data["cash_flows"]) == pytest.approx(data["tco_usd"], abs=0.05)


def test_purchase_csv_sums_to_capex(plan):
    rows = list(csv.DictReader(io.StringIO(purchase_csv(plan))))
    assert tuple(rows[0].keys()) == PURCHASE_COLUMNS
    assert {r["category"] for r in rows} >= {"server", "rack"}
    assert sum(float(r["extended_price_usd"]) for r in rows) == pytest.approx(plan.capex_usd)
    for r in rows:
        assert float(r["extended_price_usd"]) == pytest.approx(int(r["quantity"]) * float(r["unit_price_usd"]))


def test_spare_replicas_survive_the_loss_of_the_largest(plan):
    svc = plan.inference[0]
    largest = max(r.rps_per_replica for r in svc.replicas)
    assert svc.capacity_rps - largest >= svc.required_rps - 1e-9


def test_growth_plans_every_year():
    flat = solve_text(_small(rps=10))
    grown = solve_text(_small(rps=10, growth="growth_per_year: 1.0"))  # 10, 20, 40 rps over 3 years
    assert [(r.year, r.required_rps) for r in grown.inference] == [(1, 10), (2, 20), (3, 40)]
    assert all(r.capacity_rps >= r.required_rps for r in grown.inference)
    assert grown.tco_usd > flat.tco_usd
    by_year = solve_text(_small(rps=10, growth="requests_per_s_by_year: [10, 25, 15]"))
    assert [r.required_rps for r in by_year.inference] == [10, 25, 15]


def test_growth_bought_up_front_serves_the_peak_year():
    upfront = solve_text(_small(rps=10, growth="growth_per_year: 1.0", extra="policy:\n  purchases: upfront"))
    assert [(r.year, r.required_rps) for r in upfront.inference] == [(None, 40)]
    assert upfront.inference[0].capacity_rps >= 40
    assert {r.year for r in upfront.servers} == {0}


def test_stock_caps_a_gpu():
    free = solve_text(_small(rps=30))
    top = max(free.gpus, key=free.gpus.get)
    capped = solve_text(_small(rps=30, catalog_extra=f"  stock: {{{top}: 0}}"))
    assert capped.gpus.get(top, 0) == 0
    assert capped.tco_usd >= free.tco_usd - 100


def test_vendor_policy_and_max_gpu_types():
    amd_free = solve_text(_small(rps=30, extra="policy:\n  vendors: [nvidia]"))
    assert all(not g.startswith("MI") for g in amd_free.gpus)
    one_type = solve_text(_small(rps=30, extra="policy:\n  max_gpu_types: 1"))
    assert len(one_type.gpus) == 1


def test_infeasible_budget_fix_is_exact():
    text = _small(rps=30).replace("budget_usd: 2000000", "budget_usd: 20000")
    plan = solve_text(text)
    assert plan.status == "infeasible"
    fix = next(f for f in plan.diagnosis.fixes if f.constraint == "budget")
    assert fix.required > 20000
    at = solve_text(text.replace("budget_usd: 20000", f"budget_usd: {fix.required:.0f}"))
    assert at.status == "optimal"
    below = solve_text(text.replace("budget_usd: 20000", f"budget_usd: {fix.required - 1:.0f}"))
    assert below.status == "infeasible"


def test_a_job_after_another_is_sized_for_the_time_left():
    """The successor's window starts when its predecessor can end, not at its release day."""
    plan = solve_text("""
name: chain
training:
  - name: ablation-8b
    model: llama-3.1-8b
    tokens: 2.0e11
    deadline_days: 21
  - name: run-70b
    model: llama-3.1-70b
    tokens: 2.0e11
    deadline_days: 80
    after: [ablation-8b]
""")
    assert plan.status == "optimal" and plan.verification == []
    first, second = plan.training
    assert second.start_day >= first.end_day - 1e-9
    assert second.end_day <= 80
