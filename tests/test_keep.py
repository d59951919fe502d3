"""solve --keep PLAN.json: hardware already bought is sunk and stays."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.cli import app

STARTUP = Path(__file__).parent.parent / "problems" / "startup.yaml"


@pytest.fixture(scope="module")
def plans(tmp_path_factory):
    d = tmp_path_factory.mktemp("keep")
    bigger = d / "bigger.yaml"
    bigger.write_text(STARTUP.read_text().replace("    requests_per_s: 20", "    requests_per_s: 60", 1))
    runner = CliRunner()
    for args in (
        [str(STARTUP), "--json", str(d / "first.json")],
        [str(bigger), "--json", str(d / "fresh.json")],
        [str(bigger), "--keep", str(d / "first.json"), "--json", str(d / "kept.json"), "--csv", str(d / "kept.csv")],
    ):
        run = runner.invoke(app, ["solve", "-q", *args])
        assert run.exit_code == 0, run.output
    return {n: json.loads((d / f"{n}.json").read_text()) for n in ("first", "fresh", "kept")} | {"dir": d}


def test_kept_servers_stay_and_are_not_bought_again(plans):
    first, kept = plans["first"], plans["kept"]
    owned = {(r["server"], r["gpu"], r["fabric"]): r["count"] for r in kept["servers"] if r["owned"]}
    assert owned == {(r["server"], r["gpu"], r["fabric"]): r["count"] for r in first["servers"]}
    bought = {p["sku"] for p in kept["purchase"]}
    assert sum(p["extended_price_usd"] for p in kept["purchase"]) == pytest.approx(kept["capex_usd"])
    assert kept["verification"] == []
    assert all(f"{r['server']}+{r['gpu']}" not in bought for r in first["servers"]) or kept["capex_usd"] > 0


def test_sunk_capex_is_not_charged_again(plans):
    fresh, kept, first = plans["fresh"], plans["kept"], plans["first"]
    # Never dearer than the fresh plan's purchase beside the kept hardware: that fleet is one of
    # the kept problem's choices, and it pays the fresh plan's TCO plus the kept hardware's
    # running costs (the first plan's TCO less its capex), never the kept capex again. (Not
    # "fresh minus what is already paid": the fresh plan need not buy what the first one did.)
    kept_running = first["tco_usd"] - first["capex_usd"]
    assert kept["tco_usd"] <= fresh["tco_usd"] + kept_running + 1
    fresh_counts = {(r["server"], r["gpu"]): r["count"] for r in fresh["servers"]}
    if all(fresh_counts.get((r["server"], r["gpu"]), 0) >= r["count"] for r in first["servers"]):
        # the fresh plan buys the kept servers too: keeping them saves exactly their capex (the
        # servers and racks --keep keeps; front-end switches and storage are bought for the new plan)
        sunk = sum(p["extended_price_usd"] for p in first["purchase"] if p["category"] in ("server", "rack"))
        assert kept["tco_usd"] <= fresh["tco_usd"] - sunk + 1
    assert kept["tco_usd"] >= fresh["tco_usd"] - first["capex_usd"] - first["capex_usd"]


def test_a_missing_or_foreign_plan_is_an_input_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"a": 1}')
    runner = CliRunner()
    for path in (tmp_path / "none.json", bad):
        run = runner.invoke(app, ["solve", str(STARTUP), "-q", "--keep", str(path)])
        assert run.exit_code == 2
        assert "--keep" in run.output and "Traceback" not in run.output
