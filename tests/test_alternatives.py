"""`planner alternatives` (issue 18, part 3): near-optimal plans with other GPU mixes, held
against single-GPU solves of the same problem and checked by the verifier."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from planner.catalog import load_catalog
from planner.commands.alternatives import parse_share
from planner.context import prepare
from planner.errors import InputError
from planner.explain.mga import alternatives
from planner.io.problem_io import loads_problem
from planner.pipeline import plan_context
from planner.schema.plan import Plan

CATALOG = load_catalog()
GPUS = ["L40S", "L4", "MI300X"]  # single-GPU optima $154k, $178k, $292k


def _problem(keep: list[str]) -> str:
    others = ", ".join(g for g in CATALOG.gpus if g not in keep)
    return textwrap.dedent(
        f"""
        name: alternatives
        horizon_years: 3
        catalog:
          exclude: [{others}]
        inference:
          - name: chat
            model: llama-3.1-8b
            precisions: [fp8, bf16]
            requests_per_s: 30
            input_tokens: 1000
            output_tokens: 250
            ttft_ms: 1000
            tpot_ms: 50
            disaggregation: never
        """
    )


def _solve(keep: list[str]) -> Plan:
    plan = plan_context(prepare(loads_problem(_problem(keep), "alt.yaml")))
    assert plan.status == "optimal"
    return plan


@pytest.fixture(scope="module")
def found() -> tuple[Plan, list]:
    ctx = prepare(loads_problem(_problem(GPUS), "alt.yaml"))
    optimum = plan_context(ctx)
    return optimum, alternatives(ctx, optimum, 0.5, 3)


def test_alternatives_are_within_tolerance_verified_and_each_its_own_mix(found: tuple[Plan, list]) -> None:
    optimum, alts = found
    assert alts, "L4 alone is within 50% of L40S alone"
    mixes = [frozenset(optimum.gpus)] + [frozenset(a.plan.gpus) for a in alts]
    assert len(set(mixes)) == len(mixes)  # no two share a GPU mix, none is the optimum's
    tcos = [a.plan.tco_usd for a in alts]
    assert tcos == sorted(tcos)  # cheapest first
    for a in alts:
        assert optimum.tco_usd - 1 <= a.plan.tco_usd <= optimum.tco_usd * 1.5 + 1
        assert a.delta_share == pytest.approx((a.plan.tco_usd - optimum.tco_usd) / optimum.tco_usd)
        assert a.verification == []
        assert a.differs


def test_the_first_alternative_is_no_dearer_than_any_single_other_gpu(found: tuple[Plan, list]) -> None:
    """Any plan on one GPU type the optimum does not buy is a different mix: the cheapest
    alternative costs no more than the best of those (solved on its own, independently)."""
    optimum, alts = found
    singles = {g: _solve([g]).tco_usd for g in GPUS if g not in optimum.gpus}
    within = {g: t for g, t in singles.items() if t <= optimum.tco_usd * 1.5}
    if within:
        assert alts[0].plan.tco_usd <= min(within.values()) + 1


def test_a_zero_tolerance_leaves_only_ties(found: tuple[Plan, list]) -> None:
    optimum, _ = found
    ctx = prepare(loads_problem(_problem(GPUS), "alt.yaml"))
    for a in alternatives(ctx, optimum, 0.0, 2):
        assert a.plan.tco_usd <= optimum.tco_usd + 1


@pytest.mark.parametrize(("text", "share"), [("5%", 0.05), ("0.05", 0.05), (" 12.5% ", 0.125), ("0", 0.0)])
def test_within_reads_a_share_or_a_percentage(text: str, share: float) -> None:
    assert parse_share(text) == pytest.approx(share)


@pytest.mark.parametrize("text", ["five", "-1%", "5%%", "2000%"])
def test_a_bad_tolerance_is_an_input_error(text: str) -> None:
    with pytest.raises(InputError):
        parse_share(text)


def test_the_command_writes_the_contract_json(tmp_path: Path) -> None:
    problem = tmp_path / "alt.yaml"
    problem.write_text(_problem(GPUS))
    out = tmp_path / "alt.json"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "planner",
            "alternatives",
            str(problem),
            "--within",
            "50%",
            "-n",
            "1",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    data = json.loads(out.read_text())
    assert set(data) >= {"optimal_tco_usd", "alternatives"}
    for a in data["alternatives"]:
        assert set(a) >= {"tco_usd", "delta_share", "gpus", "differs", "binding"}
    bad = subprocess.run(
        [sys.executable, "-m", "planner", "alternatives", str(problem), "--within", "lots"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert bad.returncode == 2 and "--within" in bad.stderr
