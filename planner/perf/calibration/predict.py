"""The harness: every measurement against the model, as a predicted value or the reason there is none."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from planner.catalog import Catalog, load_catalog
from planner.perf.calibration.mapping import (
    Skip,
    catalog_gpu,
    inference_precision,
    mean_outputs_by_source,
    scenario_of,
    training_precision,
)
from planner.perf.calibration.measurements import Measurement, load_measurements
from planner.perf.calibration.predict_inference import predict_inference
from planner.perf.calibration.predict_training import predict_training
from planner.schema.catalog import Gpu

FAMILIES = ("inference throughput", "inference TTFT", "inference TPOT", "training throughput", "training GPU-hours")
_FAMILY_OF_METRIC = {
    "output_tokens_per_s_total": "inference throughput",
    "output_tokens_per_s_per_gpu": "inference throughput",
    "output_tokens_per_s_unclear_total_or_per_gpu": "inference throughput",
    "samples_per_s_total": "inference throughput",
    "ttft_ms": "inference TTFT",
    "ttft_ms_mean": "inference TTFT",
    "ttft_ms_p99": "inference TTFT",
    "tpot_ms_mean": "inference TPOT",
    "tpot_ms_p99": "inference TPOT",
    "tokens_per_s_per_gpu": "training throughput",
    "tflops_per_gpu": "training throughput",
    "aggregate_pflops": "training throughput",
    "mfu_pct": "training throughput",
    "hfu_pct": "training throughput",
    "pct_of_peak_per_gpu": "training throughput",
    # Model-card totals include failures, restarts and evaluation: not steady-state throughput.
    "gpu_hours": "training GPU-hours",
    "wall_clock_hours": "training GPU-hours",
}


@dataclass(frozen=True)
class RowResult:
    """One measurement against the model: a ratio, or the reason there is none."""

    id: str
    family: str
    scenario: str
    gpu: str  # catalog id, or the source's name when skipped before mapping
    generation: str
    precision: str
    model: str
    metric: str
    measured: float
    predicted: float | None = None
    skipped: str = ""
    how: str = ""  # the query as run, and any assumption it needed

    @property
    def ratio(self) -> float | None:
        if self.predicted is None or self.measured <= 0:
            return None
        return self.predicted / self.measured

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ratio": self.ratio}


@dataclass
class Report:
    source: str
    rows: list[RowResult] = field(default_factory=list)

    @property
    def predicted(self) -> list[RowResult]:
        return [r for r in self.rows if r.ratio is not None]

    @property
    def skipped(self) -> list[RowResult]:
        return [r for r in self.rows if r.ratio is None]


def evaluate_row(catalog: Catalog, m: Measurement, mean_outputs: dict[str, int] | None = None) -> RowResult:
    """One measurement against the model: a predicted value, or the reason there is none."""
    family = _FAMILY_OF_METRIC.get(m.metric, "other")
    base = RowResult(
        id=m.id,
        family=family,
        scenario=scenario_of(m),
        gpu=m.gpu,
        generation="",
        precision="",
        model=m.model,
        metric=m.metric,
        measured=m.value,
    )
    try:
        if family == "other":
            raise Skip(f"metric {m.metric!r} not modelled")
        if m.value <= 0:
            raise Skip(f"measured value {m.value:g} is not positive")
        gpu = catalog_gpu(catalog, m.gpu)
        base = replace(base, gpu=gpu.id, generation=gpu.generation)
        if m.kind == "training":
            base = replace(base, precision=training_precision(m)[0])
            value, how = predict_training(catalog, m, gpu)
        else:
            base = replace(base, precision=_precision_label(m, gpu))
            value, how = predict_inference(catalog, m, gpu, base.scenario, mean_outputs or {})
    except Skip as why:
        return replace(base, skipped=str(why))
    return replace(base, predicted=value, how=how)


def _precision_label(m: Measurement, gpu: Gpu) -> str:
    try:
        return inference_precision(m, gpu)
    except Skip:
        return "fp8-weight-only" if "fp8" in m.precision.lower() else "not stated"


def run_calibration(path: Path | None = None, catalog: Catalog | None = None) -> Report:
    source, measurements = load_measurements(path)
    cat = catalog or load_catalog()
    outputs = mean_outputs_by_source(measurements)
    return Report(source=source, rows=[evaluate_row(cat, m, outputs) for m in measurements])
