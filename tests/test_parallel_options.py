"""Service options from worker processes: the same options, in the same order, as one
process's, and the parent keeps the workers' estimates."""

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
inference:
  - {name: s0, model: llama-3.1-8b, requests_per_s: 5, input_tokens: 512,
     output_tokens: 200, ttft_ms: 2000, tpot_ms: 80}
  - {name: s1, model: llama-3.1-8b, requests_per_s: 12, input_tokens: 2048,
     output_tokens: 200, ttft_ms: 2000, tpot_ms: 80}
  - {name: s2, model: qwen2.5-7b, requests_per_s: 3, input_tokens: 1024,
     output_tokens: 200, ttft_ms: 2000, tpot_ms: 80}
"""


def _fingerprint(options: list[Any]) -> list[tuple[Any, ...]]:
    return [
        (wo.name, o.pool, o.precision, o.gpus_per_replica, o.attention_dp, o.rps_per_replica, o.estimate.tpot_p99_ms)
        for wo in options
        for o in wo.inference
    ] + [(wo.name, r.gpu, r.server, r.reason) for wo in options for r in wo.rejected]


def test_workers_give_the_options_of_one_process(monkeypatch: pytest.MonkeyPatch) -> None:
    problem = loads_problem(PROBLEM, "many.yaml").problem
    catalog = load_catalog()
    monkeypatch.setattr(perf_inference, "KEPT", Memo())
    monkeypatch.setattr(parallel, "PARALLEL_FROM_SERVICES", 10**9)
    monkeypatch.setattr(parallel, "PARALLEL_FROM_GPUS", 10**9)
    alone = build_options(problem, catalog)

    calls: list[int] = []
    monkeypatch.setattr(parallel.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(perf_inference, "KEPT", Memo())  # the workers estimate anew
    monkeypatch.setattr(parallel, "PARALLEL_FROM_SERVICES", 2)
    from planner import executors

    mapped = executors.map_ordered

    def spy(fn, jobs, workers=1, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(workers)
        return mapped(fn, jobs, workers, *args, **kwargs)

    monkeypatch.setattr(executors, "map_ordered", spy)
    together = build_options(problem, catalog)
    assert calls and calls[0] >= 2  # the workers ran
    assert _fingerprint(together) == _fingerprint(alone)
    assert len(perf_inference.KEPT) > 0  # the parent kept what the workers estimated


WITH_JOBS = (
    PROBLEM
    + """
training:
  - {name: pretrain, model: {params_b: 3.0}, tokens: 6.0e11, deadline_days: 45, precision: bf16}
"""
)


def test_few_services_split_the_gpus_and_the_parent_estimates_nothing_again(monkeypatch: pytest.MonkeyPatch) -> None:
    problem = loads_problem(WITH_JOBS, "jobs.yaml").problem
    catalog = load_catalog()
    for memo in (perf_inference, perf_training):
        monkeypatch.setattr(memo, "KEPT", Memo())
    monkeypatch.setattr(parallel, "PARALLEL_FROM_SERVICES", 10**9)
    monkeypatch.setattr(parallel, "PARALLEL_FROM_GPUS", 10**9)
    alone = build_options(problem, catalog)
    made_alone = len(perf_inference.KEPT), len(perf_training.KEPT)
    trained_alone = [(wo.name, o.pool, o.gpus, o.days) for wo in alone for o in wo.training]

    monkeypatch.setattr(parallel.os, "cpu_count", lambda: 2)
    for memo in (perf_inference, perf_training):
        monkeypatch.setattr(memo, "KEPT", Memo())
    monkeypatch.setattr(parallel, "PARALLEL_FROM_GPUS", 2)
    monkeypatch.setattr(parallel, "_warmed", False)
    here: list[str] = []  # estimates made in this process (a forked worker appends to its own copy)
    for module, name in ((perf_inference, "_estimate"), (perf_training, "_estimate_training")):
        monkeypatch.setattr(module, name, _counted(getattr(module, name), here, name))
    split = build_options(problem, catalog)
    assert _fingerprint(split) == _fingerprint(alone)
    assert [(wo.name, o.pool, o.gpus, o.days) for wo in split for o in wo.training] == trained_alone
    assert trained_alone and made_alone[1] > 0
    # the workers made every estimate one process makes, and the parent made none of them again
    assert (len(perf_inference.KEPT), len(perf_training.KEPT)) == made_alone
    assert here == []


def _counted(fn: Any, calls: list[str], name: str) -> Any:
    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(name)
        return fn(*args, **kwargs)

    return counted
