"""Service options from worker processes (each taking every n-th service and pool): the same
options, in the same order, as one process's, and the parent keeps the workers' estimates."""

from __future__ import annotations

from typing import Any

import pytest

from planner.catalog import load_catalog
from planner.io.problem_io import loads_problem
from planner.options import parallel
from planner.options.build import build_options
from planner.perf import inference as perf_inference
from planner.perf import training as perf_training
from planner.perf.memo import Memo

PROBLEM = """
name: many
training:
  - {name: pre, model: {params_b: 1.0}, tokens: 5.0e10, deadline_days: 30}
  - {name: tune, model: llama-3.1-8b, method: lora, tokens: 1.0e8, deadline_days: 40, after: [pre]}
inference:
  - {name: s0, model: llama-3.1-8b, requests_per_s: 5, input_tokens: 512,
     output_tokens: 200, ttft_ms: 2000, tpot_ms: 80}
  - {name: s1, model: llama-3.1-8b, requests_per_s: 12, input_tokens: 2048,
     output_tokens: 200, ttft_ms: 2000, tpot_ms: 80}
  - {name: s2, model: qwen2.5-7b, requests_per_s: 3, input_tokens: 1024,
     output_tokens: 200, ttft_ms: 2000, tpot_ms: 80}
"""


def _fingerprint(options: list[Any]) -> list[tuple[Any, ...]]:
    return (
        [
            (
                wo.name,
                o.pool,
                o.precision,
                o.gpus_per_replica,
                o.attention_dp,
                o.rps_per_replica,
                o.estimate.tpot_p99_ms,
            )
            for wo in options
            for o in wo.inference
        ]
        + [(wo.name, o.pool, o.gpus, o.estimate.days) for wo in options for o in wo.training]
        + [(wo.name, r.gpu, r.server, r.reason) for wo in options for r in wo.rejected]
    )


def test_workers_give_the_options_of_one_process(monkeypatch: pytest.MonkeyPatch) -> None:
    problem = loads_problem(PROBLEM, "many.yaml").problem
    catalog = load_catalog()
    monkeypatch.setattr(perf_inference, "KEPT", Memo())
    monkeypatch.setattr(perf_training, "KEPT", Memo())
    monkeypatch.setattr(parallel, "PARALLEL_FROM_PAIRS", 10**9)
    alone = build_options(problem, catalog)
    assert any(wo.training for wo in alone) and any(wo.inference for wo in alone)

    calls: list[int] = []
    kinds: list[list[str]] = []
    monkeypatch.setattr(parallel.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(perf_inference, "KEPT", Memo())  # the workers estimate anew
    monkeypatch.setattr(perf_training, "KEPT", Memo())
    monkeypatch.setattr(parallel, "PARALLEL_FROM_PAIRS", 2)
    from planner import executors

    started = executors.started_map

    def spy(fn, jobs, workers):  # type: ignore[no-untyped-def]
        calls.append(workers)
        kinds.append(["training" if callable(job) else f"{len(job)}-tuple" for job in jobs])
        return started(fn, jobs, workers)

    monkeypatch.setattr(executors, "started_map", spy)
    together = build_options(problem, catalog)
    assert calls and calls[0] >= 2  # the workers ran
    assert _fingerprint(together) == _fingerprint(alone)
    assert len(perf_inference.KEPT) > 0  # the parent kept what the workers estimated
    # every job some of the pairs (services, catalog, limits, pairs): with no estimates kept from a
    # last run (``kept_estimates``), no worker sizes the training jobs: this process does, meanwhile
    assert set(kinds[0]) == {"4-tuple"}
    assert len(perf_training.KEPT) > 0  # so their estimates are this process's own
