"""The performance model against aiconfigurator's silicon measurements (``planner calibrate --aic``).

``aic_silicon.csv`` (from aiconfigurator's ``systems/silicon_sample.csv``; not shipped with
the package, the user passes its path) holds measured mean TTFT and TPOT of serving runs at a
fixed concurrency (a closed loop of N clients). Every aggregated (``agg``) row becomes the
question ``planner estimate inference --concurrency N`` asks, with the row's attention data
parallelism, answered by the planner's model and by a naive roofline on the same shapes; the
report gives per model and GPU, per model and concurrency band, and overall: rows, median
predicted / measured ratio and error ``exp(median |ln ratio|)``, planner and roofline side by side.

One module per step:

- ``aic_mapping``: a row in the planner's terms (``Case``), or ``Skip`` with the reason;
- ``aic`` (here): read the table, ask both models every row (``check``, ``run_aic``);
- ``aic_roofline``: the naive roofline;
- ``aic_summary``: a predicted row (``Result``) and the summaries;
- ``aic_render``: terminal tables, Markdown, JSON.

Nothing here fits a factor: no per-row tuning, the catalog's efficiencies as they are.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from planner.catalog import Catalog, load_catalog
from planner.errors import InputError
from planner.perf.calibration.aic_mapping import (
    BANDS,
    COLUMNS,
    MODELS,
    PRECISIONS,
    SYSTEMS,
    Case,
    band_of,
    catalog_model,
    concurrency_of,
    gpu_order,
    measured_ms,
    to_case,
)
from planner.perf.calibration.aic_render import (
    RULES,
    markdown,
    print_report,
    report_json,
    skip_lines,
    text_table,
)
from planner.perf.calibration.aic_roofline import Roofline, roofline
from planner.perf.calibration.aic_summary import (
    Result,
    Summary,
    by_keys,
    by_model_and_band,
    by_model_and_gpu,
    overall,
    summarize,
)
from planner.perf.calibration.mapping import Skip, chassis_for
from planner.perf.inference import estimate_inference
from planner.perf.inference_types import InferenceEstimate, InferenceQuery
from planner.perf.links import link_for
from planner.perf.shapes import shape_of

__all__ = [
    "BANDS",
    "COLUMNS",
    "MODELS",
    "PRECISIONS",
    "RULES",
    "SYSTEMS",
    "Case",
    "Report",
    "Result",
    "Roofline",
    "Skip",
    "Summary",
    "band_of",
    "catalog_model",
    "check",
    "concurrency_of",
    "estimate",
    "gpu_order",
    "load_rows",
    "markdown",
    "print_report",
    "query_for",
    "report_json",
    "roofline",
    "run_aic",
    "skip_lines",
    "summarize",
    "text_table",
    "to_case",
]


@dataclass
class Report:
    source: Path
    rows: int
    results: list[Result] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    notes: set[str] = field(default_factory=set)  # mapping notes that applied
    uncalibrated: set[str] = field(default_factory=set)  # GPUs whose generation has no fitted efficiency

    def summaries(self) -> list[Summary]:
        """Per (model, GPU), then the model's overall line; models and GPUs in a stable order."""
        return by_model_and_gpu(self.results)

    def summaries_by_band(self) -> list[Summary]:
        """Per (model, concurrency band), then all models per band."""
        return by_model_and_band(self.results)

    def overall(self) -> list[Summary]:
        """One line over every predicted row (empty when none was)."""
        return overall(self.results)

    def summaries_by(self, *keys: str) -> list[tuple[tuple[str, ...], Summary]]:
        """Finer groups (e.g. precision and engine) inside each (model, GPU)."""
        return by_keys(self.results, *keys)


def query_for(case: Case, catalog: Catalog) -> InferenceQuery:
    """What ``planner estimate inference --concurrency N`` asks, with the row's attention DP."""
    gpu = catalog.gpus[case.gpu]
    chassis = chassis_for(catalog, gpu, case.gpus)
    return InferenceQuery(
        model=shape_of(case.model, catalog),
        gpu=gpu,
        gpus=case.gpus,
        precision=case.precision,
        input_tokens=case.input_tokens,
        output_tokens=case.output_tokens,
        link=link_for(chassis, gpu, case.gpus),
        clients=case.concurrency,
        attention_dp=case.attention_dp,
    )


def estimate(case: Case, catalog: Catalog | None = None) -> InferenceEstimate:
    """The planner's answer for one case, with the catalog's efficiency factors."""
    cat = catalog or load_catalog()
    eff = cat.efficiency
    return estimate_inference(query_for(case, cat), eff.generations[cat.gpus[case.gpu].generation], eff.serving)


def _does_not_fit(est: InferenceEstimate, case: Case, catalog: Catalog) -> str:
    if "concurrency" in est.reason:
        if case.concurrency > catalog.efficiency.serving.max_batch:
            return f"planner: concurrency above serving.max_batch ({catalog.efficiency.serving.max_batch})"
        return "planner: concurrency above what the KV cache holds"
    if est.reason.startswith("needs"):
        return "planner: weights and one request's KV cache do not fit"
    return f"planner: {est.reason}"


def check(rows: Iterable[dict[str, str]], source: Path, catalog: Catalog | None = None) -> Report:
    """Every row against the planner and the roofline, or counted under the reason it is skipped.

    Rows the planner answers "does not fit" (KV cache, ``serving.max_batch``) are skipped with
    that reason: the engine ran them, the model says it could not."""
    cat = catalog or load_catalog()
    eff = cat.efficiency
    report = Report(source=source, rows=0)
    answers: dict[Case, tuple[InferenceEstimate, Roofline | None]] = {}  # rows repeat cases
    for row in rows:
        report.rows += 1
        try:
            case, notes = to_case(row, cat)
        except Skip as why:
            report.skipped[str(why)] += 1
            continue
        if case not in answers:
            gen = eff.generations[cat.gpus[case.gpu].generation]
            answers[case] = estimate(case, cat), roofline(query_for(case, cat), gen, eff.serving)
        est, roof = answers[case]
        if not est.fits or roof is None:
            report.skipped[_does_not_fit(est, case, cat)] += 1
            continue
        report.notes.update(notes)
        if est.factors.get("calibrated") != "yes":
            report.uncalibrated.add(f"{case.gpu} ({est.factors.get('generation')})")
        ttft, tpot = measured_ms(row)
        report.results.append(
            Result(
                row_id=row["id"],
                case=case,
                backend=row["backend"],
                row_precision=row["precision"],
                measured_ttft_ms=ttft,
                measured_tpot_ms=tpot,
                ttft_ms=est.ttft_ms,
                tpot_ms=est.tpot_ms,
                roofline_ttft_ms=roof.ttft_ms,
                roofline_tpot_ms=roof.tpot_ms,
            )
        )
    return report


def load_rows(path: Path) -> list[dict[str, str]]:
    """The table's rows (blank for a missing cell); ``InputError`` for a file that is not one."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("file not found", file=str(path), hint="pass the path of aic_silicon.csv") from None
    except IsADirectoryError:
        raise InputError("a folder, not a file", file=str(path), hint="pass the path of aic_silicon.csv") from None
    except UnicodeDecodeError:
        raise InputError("not a UTF-8 text file", file=str(path)) from None
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise InputError(
            f"missing column(s): {', '.join(missing)}",
            file=str(path),
            hint="expected the columns of aiconfigurator's systems/silicon_sample.csv (aic_silicon.csv)",
        )
    try:
        # a short row leaves None in its last cells, a long one a list under the key None
        return [
            {k: v or "" for k, v in row.items() if isinstance(k, str) and not isinstance(v, list)} for row in reader
        ]
    except csv.Error as exc:
        raise InputError(f"not a readable CSV table: {exc}", file=str(path), line=reader.line_num) from None


def run_aic(path: Path, catalog: Catalog | None = None) -> Report:
    """Read the table at ``path`` and check every row."""
    return check(load_rows(path), path, catalog)
