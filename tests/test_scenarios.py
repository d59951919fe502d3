"""What-if grids and comparisons through the real CLI and the library."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.cli import app
from planner.errors import InputError
from planner.io.overrides import apply_override, grid, parse_set
from planner.io.problem_io import load_problem
from planner.whatif.scenarios import run_grid

ROOT = Path(__file__).resolve().parents[1]
STARTUP = ROOT / "problems" / "startup.yaml"


def test_parse_set_reads_yaml_values():
    assert parse_set("finance.budget_usd=1e6,2500000") == ("finance.budget_usd", [1e6, 2500000])
    assert parse_set("catalog.exclude=[B200],[]") == ("catalog.exclude", [["B200"], []])
    with pytest.raises(InputError):
        parse_set("finance.budget_usd")


def test_override_addresses_list_items_by_name():
    data = {"training": [{"name": "pre.v2", "deadline_days": 10}], "finance": {}}
    apply_override(data, "training.pre.v2.deadline_days", 20)
    apply_override(data, "catalog.prices_usd.H100-SXM", 22000)
    assert data["training"][0]["deadline_days"] == 20
    assert data["catalog"]["prices_usd"]["H100-SXM"] == 22000
    with pytest.raises(InputError, match="no training item named"):
        apply_override(data, "training.nope.deadline_days", 1)


def test_grid_is_every_combination_in_order():
    g = grid([("a", [1, 2]), ("b", ["x", "y"])])
    assert g == [{"a": 1, "b": "x"}, {"a": 1, "b": "y"}, {"a": 2, "b": "x"}, {"a": 2, "b": "y"}]


def test_tco_never_falls_as_electricity_price_rises():
    rows = run_grid(load_problem(STARTUP), [("finance.electricity_usd_per_kwh", [0.05, 0.1, 0.2, 0.4])])
    tcos = [r["tco_usd"] for r in rows]
    assert all(r["status"] == "optimal" for r in rows)
    assert tcos == sorted(tcos)


def test_bad_and_infeasible_variants_are_rows_not_crashes():
    rows = run_grid(load_problem(STARTUP), [("finance.budget_usd", [-5, 1000, 4000000])])
    assert [r["status"] for r in rows] == ["error", "infeasible", "optimal"]
    assert "budget" in rows[0]["reason"]
    assert "budget" in rows[1]["reason"]


def test_whatif_cli_writes_csv(tmp_path):
    out = tmp_path / "grid.csv"
    run = CliRunner().invoke(
        app, ["whatif", str(STARTUP), "--set", "site.racks=1,8", "--set", "horizon_years=3,5", "--csv", str(out)]
    )
    assert run.exit_code == 0, run.output
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert len(rows) == 4
    assert {"site.racks", "horizon_years", "status", "tco_usd", "capex_usd"} <= set(rows[0])


def test_compare_cli_side_by_side(tmp_path):
    out = tmp_path / "cmp.csv"
    run = CliRunner().invoke(
        app, ["compare", str(STARTUP), str(ROOT / "problems" / "qlora-workstation.yaml"), "--csv", str(out)]
    )
    assert run.exit_code == 0, run.output
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert [Path(r["problem"]).name for r in rows] == ["startup.yaml", "qlora-workstation.yaml"]
    assert float(rows[0]["tco_usd"]) > float(rows[1]["tco_usd"])


def test_parallel_grid_equals_sequential_in_order():
    sets = [("finance.electricity_usd_per_kwh", [0.05, 0.3]), ("site.racks", [2, 8])]
    loaded = load_problem(STARTUP)
    assert run_grid(loaded, sets, workers=2) == run_grid(loaded, sets, workers=1)


def test_ray_executor_gives_the_same_rows_in_the_same_order():
    """A local Ray instance stands in for a cluster (``--address`` joins a real one)."""
    sets = [("finance.electricity_usd_per_kwh", [0.05, 0.3]), ("site.racks", [2, 8])]
    loaded = load_problem(STARTUP)
    assert run_grid(loaded, sets, workers=2, executor="ray") == run_grid(loaded, sets, workers=1)


def test_unknown_executor_is_an_input_error():
    run = CliRunner().invoke(app, ["whatif", str(STARTUP), "--set", "site.racks=2", "--executor", "slurm"])
    assert run.exit_code == 2 and "executor" in run.output


def test_compare_says_what_differs():
    from planner.whatif.scenarios import differences

    rows = [
        {"problem": "a", "status": "optimal", "gpus": "8x H100-SXM", "tight": "budget", "tco_usd": 100.0},
        {"problem": "b", "status": "optimal", "gpus": "8x B200", "tight": "budget", "tco_usd": 90.0},
        {"problem": "c", "status": "optimal", "gpus": "8x H100-SXM", "tight": "budget", "tco_usd": 100.0},
    ]
    lines = differences(rows)
    assert lines[0] == "b vs a: buys 8x B200 instead of 8x H100-SXM; tco_usd -10"
    assert lines[1] == "c vs a: the same plan"
