"""Scenario files and Monte Carlo draws over candidate plans."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from planner.cli import app
from planner.io.problem_io import load_problem
from planner.whatif.montecarlo import ScenarioFile, run_scenarios

STARTUP = Path(__file__).resolve().parents[1] / "problems" / "startup.yaml"
SPEC = {
    "scenarios": [{"name": "big-chat", "set": {"inference.chat.requests_per_s": 35}}],
    "monte_carlo": {
        "samples": 4,
        "seed": 3,
        "draws": {
            "finance.electricity_usd_per_kwh": {"uniform": [0.05, 0.3]},
            "inference.chat.requests_per_s": {"uniform": [15, 32]},
        },
    },
}


def test_draws_are_reproducible_and_bigger_hardware_fails_less():
    spec = ScenarioFile.model_validate(SPEC)
    rows, mc = run_scenarios(load_problem(STARTUP), spec)
    again_rows, again = run_scenarios(load_problem(STARTUP), spec)
    assert (rows, mc) == (again_rows, again)
    assert [r["scenario"] for r in rows] == ["base", "big-chat"]
    by_name = {r["candidate"]: r for r in mc}
    # hardware sized for 35 rps meets every drawn demand up to 32 rps; the base may not
    assert by_name["big-chat"]["fails"] == 0
    assert by_name["big-chat"]["fails"] <= by_name["base"]["fails"]
    for r in mc:
        if r["tco_p50_usd"] is not None:
            assert r["tco_p10_usd"] <= r["tco_p50_usd"] <= r["tco_p90_usd"]


def test_bad_scenario_file_is_an_input_error(tmp_path):
    bad = tmp_path / "s.yaml"
    bad.write_text("monte_carlo:\n  samples: 3\n  draws:\n    finance.pue: {normal: [1.3]}\n")
    run = CliRunner().invoke(app, ["whatif", str(STARTUP), "--scenarios", str(bad)])
    assert run.exit_code == 2
    assert "Traceback" not in run.output
    assert "s.yaml" in run.output and "draws" in run.output
