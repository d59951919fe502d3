"""Training options dropped as dominated (``options.dominance``) never hold the optimum: the
plan with the pruning equals the plan with every option kept."""

from __future__ import annotations

import textwrap

import pytest

from planner.catalog import load_catalog
from planner.io.problem_io import loads_problem
from planner.options import build as options_build
from planner.pipeline import plan_problem
from planner.schema.plan import Plan


def _problem(b200_usd: int) -> str:
    """One 8B pretraining job and a small service, on H100-SXM and B200 only: one B200 server
    meets the 30-day deadline, one H100 server does not, two H100 servers on a fabric do. The
    service buys H100s anyway, so a B200 is one more GPU type to operate (25,000 USD a year)."""
    others = sorted(g for g in load_catalog().gpus if g not in ("H100-SXM", "B200"))
    return textwrap.dedent(
        f"""
        name: another-type
        horizon_years: 3
        catalog:
          exclude: [{", ".join(others)}]
          prices_usd: {{B200: {b200_usd}}}
        training:
          - {{name: pre, model: {{params_b: 8.0}}, tokens: 3.0e11, deadline_days: 30}}
        inference:
          - {{name: chat, model: llama-3.1-8b, requests_per_s: 2, input_tokens: 512, output_tokens: 128,
              ttft_ms: 2000, tpot_ms: 60}}
        """
    )


def _plan(text: str) -> Plan:
    return plan_problem(loads_problem(text, "another-type.yaml"))


def test_a_single_server_of_another_type_pays_that_type_s_charge(monkeypatch: pytest.MonkeyPatch) -> None:
    """At $67,000 a B200, one B200 server bought alone (server and rack) costs less than the two
    H100 servers and NICs of the fabric option, but not once its type's operations charge is
    counted: the pruning used to drop the fabric option, and the plan cost $4,388 more."""
    pruned = _plan(_problem(67_000))
    monkeypatch.setattr(options_build, "prune_training", lambda options, *args, **kwargs: options)
    every = _plan(_problem(67_000))
    assert pruned.status == every.status == "optimal"
    assert pruned.tco_usd == pytest.approx(every.tco_usd, abs=0.01)
    assert [(j.gpu, j.gpus, j.fabric) for j in pruned.training] == [(j.gpu, j.gpus, j.fabric) for j in every.training]
    assert pruned.training[0].gpu == "H100-SXM" and pruned.training[0].fabric != "none"
