"""Finance exports: the spreadsheet's totals equal the plan's; the HTML report is self-contained."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from openpyxl import load_workbook
from typer.testing import CliRunner

from planner.cli import app
from planner.io.problem_io import load_problem
from planner.pipeline import plan_problem
from planner.report.charts import cash_flow_png, sweep_png, tco_breakdown_png
from planner.report.html_report import plan_html
from planner.report.xlsx import plan_xlsx

ROOT = Path(__file__).resolve().parents[1]
STARTUP = ROOT / "problems" / "startup.yaml"
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def plan():
    return plan_problem(load_problem(STARTUP))


def test_spreadsheet_totals_equal_the_plan(plan, tmp_path):
    path = tmp_path / "plan.xlsx"
    path.write_bytes(plan_xlsx(plan))
    wb = load_workbook(path)
    assert {"Summary", "Purchase", "Cash flows", "TCO breakdown", "Assumptions", "Limits"} <= set(wb.sheetnames)
    purchase = list(wb["Purchase"].iter_rows(values_only=True))
    header, body, total = purchase[0], purchase[1:-1], purchase[-1]
    ext = header.index("extended_price_usd")
    assert sum(r[ext] for r in body) == pytest.approx(plan.capex_usd)
    assert total[ext] == pytest.approx(plan.capex_usd)
    flows = list(wb["Cash flows"].iter_rows(values_only=True))
    pv = flows[0].index("present_value_usd")
    assert sum(r[pv] for r in flows[1:-1]) == pytest.approx(plan.tco_usd, abs=0.05)
    breakdown = list(wb["TCO breakdown"].iter_rows(values_only=True))[1:]
    assert sum(v for k, v in breakdown if k != "tco") == pytest.approx(plan.tco_usd, abs=0.05)
    summary = dict(wb["Summary"].iter_rows(min_row=2, values_only=True))
    assert summary["tco_usd"] == pytest.approx(plan.tco_usd)


def test_html_report_needs_no_network(plan):
    page = plan_html(plan)
    assert page.startswith("<!doctype html>")
    assert f"{plan.tco_usd:,.0f}" in page
    # nothing is fetched at view time: no external scripts, styles or images
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    assert page.count("data:image/png;base64,") == 2


def test_charts_are_png(plan):
    assert tco_breakdown_png(plan).startswith(PNG)
    assert cash_flow_png(plan).startswith(PNG)
    rows = [
        {"finance.electricity_usd_per_kwh": p, "status": "optimal", "tco_usd": 1000.0 * (1 + p)} for p in (0.1, 0.2)
    ]
    assert sweep_png(rows, ["finance.electricity_usd_per_kwh"]).startswith(PNG)


def test_solve_writes_every_export(tmp_path):
    charts = tmp_path / "charts"
    charts.mkdir()
    run = CliRunner().invoke(
        app,
        [
            "solve",
            str(STARTUP),
            "-q",
            "--xlsx",
            str(tmp_path / "p.xlsx"),
            "--html",
            str(tmp_path / "p.html"),
            "--charts",
            str(charts),
        ],
    )
    assert run.exit_code == 0, run.output
    assert load_workbook(tmp_path / "p.xlsx")["Summary"]["A1"].value == "key"
    assert (tmp_path / "p.html").read_text().startswith("<!doctype html>")
    assert sorted(p.name for p in charts.iterdir()) == ["cash_flow.png", "gantt.png", "tco_breakdown.png"]


def test_whatif_writes_grid_sheet_and_chart(tmp_path):
    run = CliRunner().invoke(
        app,
        [
            "whatif",
            str(STARTUP),
            "--set",
            "finance.electricity_usd_per_kwh=0.05,0.3",
            "--xlsx",
            str(tmp_path / "w.xlsx"),
            "--chart",
            str(tmp_path / "w.png"),
        ],
    )
    assert run.exit_code == 0, run.output
    grid = list(load_workbook(tmp_path / "w.xlsx")["What-if"].iter_rows(values_only=True))
    assert len(grid) == 3 and grid[0][0] == "finance.electricity_usd_per_kwh"
    assert (tmp_path / "w.png").read_bytes().startswith(PNG)
