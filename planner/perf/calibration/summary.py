"""Summaries of the ratios: per family, per GPU generation and precision, per scenario; worst rows, skips."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any

from planner.perf.calibration.predict import FAMILIES, Report, RowResult


@dataclass(frozen=True)
class Summary:
    group: str
    count: int
    median_ratio: float
    median_abs_error: float  # median of |ratio - 1|
    worst_ratio: float  # farthest from 1 in log terms (x2 and x0.5 are equally bad)
    worst_id: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _log_error(r: RowResult) -> float:
    return abs(math.log(r.ratio)) if r.ratio else 0.0


def summarize(group: str, rows: Iterable[RowResult]) -> Summary | None:
    rated = [r for r in rows if r.ratio is not None]
    if not rated:
        return None
    ratios = [r.ratio for r in rated if r.ratio is not None]
    worst = max(rated, key=_log_error)
    return Summary(
        group=group,
        count=len(rated),
        median_ratio=statistics.median(ratios),
        median_abs_error=statistics.median(abs(x - 1) for x in ratios),
        worst_ratio=worst.ratio or 0.0,
        worst_id=worst.id,
    )


def summaries_by(report: Report, key: Callable[[RowResult], str], order: Iterable[str] = ()) -> list[Summary]:
    groups: dict[str, list[RowResult]] = {}
    for r in report.predicted:
        groups.setdefault(key(r), []).append(r)
    names = [g for g in order if g in groups] + sorted(g for g in groups if g not in set(order))
    return [s for g in names if (s := summarize(g, groups[g])) is not None]


def family_summaries(report: Report) -> list[Summary]:
    rows = summaries_by(report, lambda r: r.family, FAMILIES)
    overall = summarize("overall", report.predicted)
    return rows + ([overall] if overall else [])


def generation_summaries(report: Report) -> list[Summary]:
    """Per family x generation x precision: the cells a per-generation factor would be fitted on."""
    order = [f"{f} | {g} | {p}" for f in FAMILIES for g in _generations(report) for p in _precisions(report)]
    return summaries_by(report, lambda r: f"{r.family} | {r.generation} | {r.precision}", order)


def scenario_summaries(report: Report) -> list[Summary]:
    scenarios = sorted({r.scenario for r in report.rows})
    order = [f"{f} | {s}" for f in FAMILIES for s in scenarios]
    return summaries_by(report, lambda r: f"{r.family} | {r.scenario}", order)


def _generations(report: Report) -> list[str]:
    return sorted({r.generation for r in report.rows if r.generation})


def _precisions(report: Report) -> list[str]:
    return sorted({r.precision for r in report.rows if r.precision})


def worst_rows(report: Report, n: int = 10) -> list[RowResult]:
    return sorted(report.predicted, key=_log_error, reverse=True)[:n]


def skip_counts(report: Report) -> dict[str, int]:
    """Skipped rows by kind of reason (the text before the first colon)."""
    counts: dict[str, int] = {}
    for r in report.skipped:
        kind = r.skipped.split(":", 1)[0]
        counts[kind] = counts.get(kind, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
