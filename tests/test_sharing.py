"""Training jobs that do not overlap in time share GPUs; services hold theirs all along."""

from __future__ import annotations

from planner.catalog import load_catalog
from tests.conftest import solve_text

KEEP = ["H100-SXM", "L40S", "A100-SXM-80GB"]


def _problem(second_release: float, second_deadline: float) -> str:
    exclude = ", ".join(g for g in load_catalog().gpus if g not in KEEP)
    return f"""
name: sharing
catalog:
  exclude: [{exclude}]
training:
  - name: first
    model: llama-3.1-8b
    tokens: 3.0e10
    deadline_days: 10
  - name: second
    model: llama-3.1-8b
    tokens: 3.0e10
    release_day: {second_release}
    deadline_days: {second_deadline}
"""


def test_jobs_in_sequence_buy_fewer_gpus_than_jobs_at_once():
    at_once = solve_text(_problem(0, 10))
    in_turn = solve_text(_problem(10, 20))
    assert at_once.status == in_turn.status == "optimal"
    assert at_once.verification == [] and in_turn.verification == []
    assert sum(in_turn.gpus.values()) < sum(at_once.gpus.values())
    assert in_turn.tco_usd < at_once.tco_usd
    first, second = in_turn.training
    # the same GPUs, one job after the other
    if (first.server, first.gpu) == (second.server, second.gpu):
        assert second.start_day >= first.end_day - 1e-9 or first.start_day >= second.end_day - 1e-9
