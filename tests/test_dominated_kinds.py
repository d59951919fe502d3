"""Replica kinds that smaller ones already beat are not sized by a rate search: the options and
reasons are the ones a full enumeration gives, in the same order, for fewer steady states; and
``plans_within`` only says "at most this rate" when the full estimate agrees."""

from __future__ import annotations

from typing import Any

import pytest

from planner.catalog import Catalog
from planner.io.problem_io import load_problem
from planner.options import inference as options_inference
from planner.options import parallel
from planner.options.build import build_options
from planner.perf import inference as perf_inference
from planner.perf.inference import estimate_inference, plans_within
from planner.perf.inference_types import InferenceQuery
from planner.perf.load import Load
from planner.perf.memo import Memo
from planner.perf.shapes import shape_of
from tests.conftest import PROBLEMS


def _fingerprint(options: list[Any]) -> list[tuple[Any, ...]]:
    return [
        (wo.name, o.pool, o.precision, o.gpus_per_replica, o.attention_dp, o.speculation, o.estimate)
        for wo in options
        for o in wo.inference
    ] + [(wo.name, r.gpu, r.server, r.reason) for wo in options for r in wo.rejected]


def _enumerate(monkeypatch: pytest.MonkeyPatch, name: str, catalog: Catalog) -> tuple[list[Any], int]:
    """The problem's options, in one process, from an empty memo, and the steady states it took."""
    monkeypatch.setattr(perf_inference, "KEPT", Memo())
    monkeypatch.setattr(parallel, "PARALLEL_FROM_PAIRS", 10**9)
    states = [0]
    real = Load.state

    def counted(self: Load, rate: float) -> Any:
        states[0] += 1
        return real(self, rate)

    monkeypatch.setattr(Load, "state", counted)
    problem = load_problem(PROBLEMS / name).problem
    return build_options(problem, catalog), states[0]


@pytest.mark.parametrize("name", ["startup.yaml", "train-then-serve.yaml"])
def test_skipping_beaten_kinds_changes_no_option(monkeypatch: pytest.MonkeyPatch, catalog: Catalog, name: str) -> None:
    skipped, fewer = _enumerate(monkeypatch, name, catalog)
    monkeypatch.setattr(options_inference, "plans_within", lambda *args: False)  # every kind searched
    full, more = _enumerate(monkeypatch, name, catalog)
    assert _fingerprint(skipped) == _fingerprint(full)
    assert fewer < 0.8 * more  # startup: 936 against 1,329 steady states


def _query(catalog: Catalog, gpu: str, gpus: int, precision: str, tpot_ms: float) -> InferenceQuery:
    from planner.perf.links import link_for

    chassis = next(c for c in catalog.servers.values() if gpu in c.gpus and c.gpus_per_server >= gpus)
    return InferenceQuery(
        model=shape_of("llama-3.1-70b", catalog),
        gpu=catalog.gpus[gpu],
        gpus=gpus,
        precision=precision,
        input_tokens=1024,
        output_tokens=256,
        link=link_for(chassis, catalog.gpus[gpu], gpus),
        tpot_ms=tpot_ms,
        ttft_ms=1000,
    )


@pytest.mark.parametrize(
    ("gpu", "gpus", "precision", "tpot_ms"),
    [("H100-SXM", 2, "fp8", 50), ("H100-SXM", 8, "fp8", 50), ("H200-SXM", 4, "fp8", 30), ("L40S", 4, "int4", 50)],
)
def test_plans_within_agrees_with_the_estimate(
    catalog: Catalog, gpu: str, gpus: int, precision: str, tpot_ms: float
) -> None:
    q = _query(catalog, gpu, gpus, precision, tpot_ms)
    gen, serving = catalog.efficiency.generations[catalog.gpus[gpu].generation], catalog.efficiency.serving
    est = estimate_inference(q, gen, serving)
    ceiling = serving.headroom * (est.requests_per_s or 0.0)
    if not est.fits:  # nothing to beat: never "within"
        assert not plans_within(q, gen, serving, 1e9)
        return
    planned = est.planning_requests_per_s
    assert planned <= ceiling * (1 + 1e-12)
    assert plans_within(q, gen, serving, ceiling)  # the ceiling bounds what the search finds
    assert not plans_within(q, gen, serving, ceiling * 0.999)  # below it, only the search can tell


def test_a_kind_missing_its_targets_is_never_within(catalog: Catalog) -> None:
    q = _query(catalog, "L40S", 4, "fp8", 1.0)  # 1 ms TPOT: no load meets it
    gen, serving = catalog.efficiency.generations["ada"], catalog.efficiency.serving
    assert not estimate_inference(q, gen, serving).fits
    assert not plans_within(q, gen, serving, 1e9)  # its reason comes from the full estimate
