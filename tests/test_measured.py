"""Measured numbers win: a user's benchmark overrides the model; generic services plan from benchmarks."""

from __future__ import annotations

import pytest

from planner.errors import InputError
from tests.conftest import solve_text

BASE = """
name: measured
catalog:
  exclude: [{exclude}]
inference:
{services}
"""
KEEP = {"H100-SXM", "L4", "T4", "L40S"}


def _problem(services: str) -> str:
    from planner.catalog import load_catalog

    exclude = ", ".join(g for g in load_catalog().gpus if g not in KEEP)
    return BASE.format(exclude=exclude, services=services)


CHAT = """  - name: chat
    model: llama-3.1-8b
    precisions: [fp8]
    requests_per_s: 40
    tpot_ms: 50
    ttft_ms: 1000
"""


def test_a_benchmark_overrides_the_model():
    modelled = solve_text(_problem(CHAT))
    # claim an L4 replica serves 40 requests/s: far beyond the model, so it must win
    measured = solve_text(
        _problem(
            CHAT
            + """    measured:
      - {gpu: L4, precision: fp8, gpus_per_replica: 1, requests_per_s: 40, tpot_ms: 30}
"""
        )
    )
    reps = measured.inference[0].replicas
    assert [(r.gpu, r.source, r.count) for r in reps] == [("L4", "measured", 1)]
    assert measured.inference[0].capacity_rps == pytest.approx(40)
    assert measured.tco_usd < modelled.tco_usd
    assert measured.verification == []


def test_a_benchmark_that_misses_the_target_is_not_used():
    plan = solve_text(
        _problem(
            CHAT
            + """    measured:
      - {gpu: L4, precision: fp8, requests_per_s: 400, tpot_ms: 80}
"""
        )
    )
    assert all(r.source == "model" for r in plan.inference[0].replicas)


def test_generic_service_is_planned_from_benchmarks_alone():
    plan = solve_text(
        _problem("""  - name: ocr
    requests_per_s: 100
    spare_replicas: 1
    measured:
      - {gpu: T4, requests_per_s: 12}
      - {gpu: L4, requests_per_s: 30}
      - {gpu: L40S, requests_per_s: 70}
""")
    )
    svc = plan.inference[0]
    assert svc.model == "generic"
    assert plan.status == "optimal" and plan.verification == []
    largest = max(r.rps_per_replica for r in svc.replicas)
    assert svc.capacity_rps - largest >= 100 - 1e-9
    assert {r.gpu for r in svc.replicas} <= {"T4", "L4", "L40S"}


def test_generic_service_needs_measurements():
    with pytest.raises(InputError, match="measured"):
        solve_text(
            _problem("""  - name: ocr
    requests_per_s: 100
""")
        )
