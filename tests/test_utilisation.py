"""Each owned pool's busy share of its GPU-hours, and the advice a mostly idle pool gets: what
renting its work would cost (priced even when renting is off). By hand from the plan's rows."""

from __future__ import annotations

import json

import pytest

from planner.catalog import load_catalog
from planner.finance import Rates
from planner.io.problem_io import load_problem
from planner.report.tables import plan_json
from tests.conftest import PROBLEMS, example_plan


@pytest.fixture(scope="module")
def plan():
    return example_plan("train-then-serve.yaml")


def test_busy_share_by_hand(plan) -> None:
    (row,) = plan.utilisation
    (job,) = plan.training
    (svc,) = plan.inference
    gpus = sum(r.count * r.gpus_per_server for r in plan.servers)
    served = sum(r.count * r.gpus_per_replica for r in svc.replicas)
    busy = job.gpus * job.days + served * (svc.end_day - svc.start_day)
    assert row.gpus == gpus and row.gpu_days == pytest.approx(gpus * 3 * 365, abs=0.1)
    assert row.busy_gpu_days == pytest.approx(busy, abs=0.1)
    assert row.busy_share == pytest.approx(busy / (gpus * 3 * 365), abs=1e-4)
    assert row.busy_share < 0.5


def test_a_mostly_idle_cluster_is_told_what_renting_its_work_would_cost(plan) -> None:
    """Renting is off in this problem; the advice prices it anyway, from the cloud catalog."""
    problem = load_problem(PROBLEMS / "train-then-serve.yaml").problem
    assert problem.finance.rent == "none"
    (advice,) = [a for a in plan.advice if a.kind == "utilisation"]
    catalog = load_catalog()
    rates = Rates.of(problem)
    (job,) = plan.training
    (svc,) = plan.inference
    price = catalog.rent_usd_per_gpu_hour(job.gpu, "on_demand")
    assert price is not None and f"${price:.2f}/GPU-hour" in advice.message
    rent = rates.job_rent_pv_usd(job.gpus, job.days, price, job.deadline_days)
    served = sum(r.count * r.gpus_per_replica for r in svc.replicas)
    yearly = rates.replica_rent_usd_per_year(served, price)
    for k in (1, 2, 3):
        covered = max(0.0, min(svc.end_day, 365.0 * k) - max(svc.start_day, 365.0 * (k - 1))) / 365
        rent += yearly * covered * rates.discount_factor(k)
    assert f"${rent:,.0f}" in advice.message
    assert advice.usd is not None and advice.usd > 0.5 * rent  # renting is far cheaper here
    assert "less" in advice.message


def test_utilisation_and_advice_are_in_the_json(plan) -> None:
    data = json.loads(plan_json(plan))
    assert {"pool", "busy_share"} <= set(data["utilisation"][0])
    assert any(a["kind"] == "utilisation" and a["usd"] for a in data["advice"])


def test_a_busy_pool_gets_no_idle_advice() -> None:
    busy = example_plan("serve-70b.yaml")  # services hold every GPU all the time
    assert all(u.busy_share > 0.5 for u in busy.utilisation)
    assert not [a for a in busy.advice if a.kind == "utilisation"]


def test_utilisation_and_advice_are_in_the_spreadsheet_and_the_html(plan) -> None:
    import io

    import openpyxl

    from planner.report.html_report import plan_html
    from planner.report.xlsx import plan_xlsx

    wb = openpyxl.load_workbook(io.BytesIO(plan_xlsx(plan)))
    rows = list(wb["Utilisation"].iter_rows(min_row=2, values_only=True))
    assert rows == [(u.pool, u.gpus, u.gpu_days, u.busy_gpu_days, u.busy_share) for u in plan.utilisation]
    advice = list(wb["Advice"].iter_rows(min_row=2, values_only=True))
    assert advice == [(a.kind, a.message, a.usd) for a in plan.advice]
    html = plan_html(plan)
    (idle,) = [a for a in plan.advice if a.kind == "utilisation"]
    assert "The fleet over the horizon" in html and idle.message.split(";")[0] in html
