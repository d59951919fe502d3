"""Predicting an inference row: the query ``planner estimate inference`` would make, and its answer."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from planner.catalog import Catalog
from planner.perf.calibration.assumptions import GPUS_PER_SERVER, MLPERF_SERVER_TPOT_MS, MLPERF_SERVER_TTFT_MS
from planner.perf.calibration.mapping import (
    Deployment,
    Skip,
    chassis_for,
    inference_precision,
    int_or_none,
    lengths,
    model_shape,
    parse_deployment,
)
from planner.perf.calibration.measurements import Measurement
from planner.perf.inference import estimate_inference
from planner.perf.inference_types import InferenceEstimate, InferenceQuery
from planner.perf.links import link_for
from planner.perf.shapes import ModelShape
from planner.schema.catalog import Gpu


@dataclass(frozen=True)
class _InferenceSetup:
    shape: ModelShape
    gpu: Gpu
    precision: str
    input_tokens: int
    output_tokens: int
    n_gpus: int
    deployment: Deployment
    scenario: str
    notes: tuple[str, ...]


def _query(catalog: Catalog, s: _InferenceSetup, tp: int, **kw: Any) -> InferenceQuery:
    return InferenceQuery(
        model=s.shape,
        gpu=s.gpu,
        gpus=tp,
        precision=s.precision,
        input_tokens=s.input_tokens,
        output_tokens=s.output_tokens,
        link=link_for(chassis_for(catalog, s.gpu, tp), s.gpu, tp),
        **kw,
    )


def _run(catalog: Catalog, q: InferenceQuery) -> InferenceEstimate:
    eff = catalog.efficiency
    return estimate_inference(q, eff.generations[q.gpu.generation], eff.serving)


def _tensor_parallel(catalog: Catalog, s: _InferenceSetup) -> tuple[int, str]:
    """The stated TP degree, else the smallest power of two that holds the model (max throughput)."""
    if s.deployment.tp is not None:
        return s.deployment.tp, ""
    tp = 1
    while tp <= min(s.n_gpus, GPUS_PER_SERVER):
        if _run(catalog, _query(catalog, s, tp)).fits:
            return tp, f"TP{tp} assumed (smallest that fits)"
        tp *= 2
    raise Skip(f"model infeasible: {s.shape.name} does not fit {s.n_gpus} x {s.gpu.id} at {s.precision}")


def _inference_estimate(catalog: Catalog, s: _InferenceSetup, tp: int) -> tuple[InferenceEstimate, list[str]]:
    """Server rows: the scenario's latency targets. Others: the stated batch, else max throughput."""
    notes: list[str] = []
    if s.scenario == "MLPerf Server":
        q = _query(catalog, s, tp, tpot_ms=MLPERF_SERVER_TPOT_MS, ttft_ms=MLPERF_SERVER_TTFT_MS, steady_batch=True)
        notes.append(f"largest batch meeting TTFT<={MLPERF_SERVER_TTFT_MS:g} ms, TPOT<={MLPERF_SERVER_TPOT_MS:g} ms")
    else:
        q = _query(catalog, s, tp, steady_batch=True)
    free = _run(catalog, q)
    if not free.fits:
        raise Skip(f"model infeasible: {free.reason}")
    batch = s.deployment.batch
    if batch is None or s.scenario == "MLPerf Server":
        notes.append(f"batch {free.batch} chosen by the model")
        return free, notes
    if batch > free.max_batch_by_memory:
        # The model caps a replica's batch (KV memory, serving.max_batch); published runs often go
        # higher. Run at the cap and say so: the gap is a finding, not a reason to drop the row.
        notes.append(f"batch {batch} capped at the model's limit {free.max_batch_by_memory}")
        batch = free.max_batch_by_memory
    else:
        notes.append(f"batch {batch}")
    return _run(catalog, replace(q, concurrency=batch)), notes


def predict_inference(
    catalog: Catalog, m: Measurement, gpu: Gpu, scenario: str, mean_outputs: dict[str, int]
) -> tuple[float, str]:
    if m.metric == "samples_per_s_total":
        raise Skip("samples/s only: beam search (4 beams), no token count, so the output length is unknown")
    if m.metric == "output_tokens_per_s_unclear_total_or_per_gpu":
        raise Skip("ambiguous unit: the source does not say whether the figure is total or per GPU")
    dep = parse_deployment(m.batch_or_concurrency)
    n_gpus = int_or_none(m.n_gpus)
    if n_gpus is None:
        raise Skip(f"GPU count not stated: {m.n_gpus!r}")
    n_in, n_out, length_note = lengths(m, mean_outputs)
    s = _InferenceSetup(
        shape=model_shape(catalog, m),
        gpu=gpu,
        precision=inference_precision(m, gpu),
        input_tokens=n_in,
        output_tokens=n_out,
        n_gpus=n_gpus,
        deployment=dep,
        scenario=scenario,
        notes=(length_note,) if length_note else (),
    )
    tp, tp_note = _tensor_parallel(catalog, s)
    est, notes = _inference_estimate(catalog, s, tp)
    replicas = dep.replicas or max(1, n_gpus // tp)
    value = _inference_metric(m.metric, est, replicas)
    how = [f"{s.shape.name} {s.precision} on {replicas} x TP{tp} {gpu.id}", *s.notes, *([tp_note] if tp_note else [])]
    how += [*notes, f"bound {est.bound}"]
    return value, "; ".join(how)


def _inference_metric(metric: str, est: InferenceEstimate, replicas: int) -> float:
    if metric == "output_tokens_per_s_total":
        return est.output_tokens_per_s * replicas
    if metric == "output_tokens_per_s_per_gpu":
        return est.output_tokens_per_s_per_gpu
    if metric.startswith("ttft_ms"):
        return est.ttft_p99_ms if metric.endswith("p99") else est.ttft_ms
    if metric.startswith("tpot_ms"):
        return est.tpot_p99_ms if metric.endswith("p99") else est.tpot_ms
    raise Skip(f"metric {metric!r} not modelled")
