"""One predicted row, and the summaries of many: count, median ratio and error, planner and roofline.

Error is the issue's definition: ``exp(median |ln(predicted / measured)|)``, a factor
(1.24x: the typical row is 24% off, either way). The summaries keep its logarithm
(``*_log_error``) and show the factor.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from planner.perf.calibration.aic_mapping import BANDS, Case, gpu_order


@dataclass(frozen=True)
class Result:
    """One predicted row: measured, the planner's and the naive roofline's mean TTFT and TPOT (ms)."""

    row_id: str
    case: Case
    backend: str
    row_precision: str
    measured_ttft_ms: float
    measured_tpot_ms: float
    ttft_ms: float
    tpot_ms: float
    roofline_ttft_ms: float
    roofline_tpot_ms: float

    @property
    def ttft_ratio(self) -> float:  # predicted / measured
        return self.ttft_ms / self.measured_ttft_ms

    @property
    def tpot_ratio(self) -> float:
        return self.tpot_ms / self.measured_tpot_ms

    @property
    def roofline_ttft_ratio(self) -> float:
        return self.roofline_ttft_ms / self.measured_ttft_ms

    @property
    def roofline_tpot_ratio(self) -> float:
        return self.roofline_tpot_ms / self.measured_tpot_ms

    def to_dict(self) -> dict[str, Any]:
        ratios = ("ttft_ratio", "tpot_ratio", "roofline_ttft_ratio", "roofline_tpot_ratio")
        return {**asdict(self), "band": self.case.band, **{k: getattr(self, k) for k in ratios}}


@dataclass(frozen=True)
class Summary:
    """A group of rows. ``gpu`` and ``band`` are "all" where the group spans them; ``model``
    is "all" on the overall line. Ratios are medians; ``*_log_error`` the median |ln ratio|."""

    model: str
    gpu: str
    count: int
    ttft_ratio: float
    ttft_log_error: float
    tpot_ratio: float
    tpot_log_error: float
    roofline_ttft_ratio: float
    roofline_ttft_log_error: float
    roofline_tpot_ratio: float
    roofline_tpot_log_error: float
    band: str = "all"

    @property
    def ttft_error(self) -> float:
        """exp(median |ln(predicted / measured)|): 1.24 is a typical row 24% off."""
        return math.exp(self.ttft_log_error)

    @property
    def tpot_error(self) -> float:
        return math.exp(self.tpot_log_error)

    @property
    def roofline_ttft_error(self) -> float:
        return math.exp(self.roofline_ttft_log_error)

    @property
    def roofline_tpot_error(self) -> float:
        return math.exp(self.roofline_tpot_log_error)

    def to_dict(self) -> dict[str, Any]:
        errors = ("ttft_error", "tpot_error", "roofline_ttft_error", "roofline_tpot_error")
        return {**asdict(self), **{k: getattr(self, k) for k in errors}}


def summarize(model: str, gpu: str, results: Sequence[Result], band: str = "all") -> Summary:
    def median(ratios: list[float]) -> tuple[float, float]:
        return statistics.median(ratios), statistics.median(abs(math.log(x)) for x in ratios)

    ttft = median([r.ttft_ratio for r in results])
    tpot = median([r.tpot_ratio for r in results])
    roof_ttft = median([r.roofline_ttft_ratio for r in results])
    roof_tpot = median([r.roofline_tpot_ratio for r in results])
    return Summary(
        model=model,
        gpu=gpu,
        band=band,
        count=len(results),
        ttft_ratio=ttft[0],
        ttft_log_error=ttft[1],
        tpot_ratio=tpot[0],
        tpot_log_error=tpot[1],
        roofline_ttft_ratio=roof_ttft[0],
        roofline_ttft_log_error=roof_ttft[1],
        roofline_tpot_ratio=roof_tpot[0],
        roofline_tpot_log_error=roof_tpot[1],
    )


def overall(results: Sequence[Result]) -> list[Summary]:
    """One line for every row (none when no row was predicted)."""
    return [summarize("all", "all", results)] if results else []


def by_model_and_gpu(results: Sequence[Result]) -> list[Summary]:
    """Per (model, GPU), then the model's overall line; models and GPUs in a stable order."""
    out: list[Summary] = []
    for model in sorted({r.case.model for r in results}):
        mine = [r for r in results if r.case.model == model]
        for gpu in sorted({r.case.gpu for r in mine}, key=gpu_order):
            out.append(summarize(model, gpu, [r for r in mine if r.case.gpu == gpu]))
        out.append(summarize(model, "all", mine))
    return out


def by_model_and_band(results: Sequence[Result]) -> list[Summary]:
    """Per (model, concurrency band), bands in ascending order, then every model per band."""
    out: list[Summary] = []
    for model in [*sorted({r.case.model for r in results}), "all"]:
        mine = [r for r in results if model in ("all", r.case.model)]
        for band, _, _ in BANDS:
            rows = [r for r in mine if r.case.band == band]
            if rows:
                out.append(summarize(model, "all", rows, band=band))
    return out


def by_keys(results: Sequence[Result], *keys: str) -> list[tuple[tuple[str, ...], Summary]]:
    """Finer groups (e.g. ``row_precision`` and ``backend``) inside each (model, GPU)."""

    def key_of(r: Result) -> tuple[str, ...]:
        return (r.case.model, r.case.gpu, *(str(getattr(r, k)) for k in keys))

    groups: dict[tuple[str, ...], list[Result]] = {}
    for r in results:
        groups.setdefault(key_of(r), []).append(r)
    order = sorted(groups, key=lambda k: (k[0], gpu_order(k[1]), *k[2:]))
    return [(k, summarize(k[0], k[1], groups[k])) for k in order]
