"""The AIC report as plain text, terminal tables, Markdown (``docs/aic_check.md``) and JSON."""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from planner.perf.calibration.aic_summary import Summary

if TYPE_CHECKING:
    from rich.console import Console

    from planner.perf.calibration.aic import Report

FIGURES = (
    "rows",
    "TTFT ratio",
    "TTFT error",
    "roofline TTFT ratio",
    "roofline TTFT error",
    "TPOT ratio",
    "TPOT error",
    "roofline TPOT ratio",
    "roofline TPOT error",
)


@dataclass(frozen=True)
class Table:
    title: str
    labels: tuple[str, ...]  # the header of the label columns, before FIGURES
    rows: list[list[str]]
    totals: frozenset[int] = frozenset()  # indexes of "all" lines (bold in Markdown)


def figure_cells(s: Summary) -> list[str]:
    return [
        str(s.count),
        f"{s.ttft_ratio:.2f}",
        f"{s.ttft_error:.2f}x",
        f"{s.roofline_ttft_ratio:.2f}",
        f"{s.roofline_ttft_error:.2f}x",
        f"{s.tpot_ratio:.2f}",
        f"{s.tpot_error:.2f}x",
        f"{s.roofline_tpot_ratio:.2f}",
        f"{s.roofline_tpot_error:.2f}x",
    ]


def tables(report: Report) -> list[Table]:
    """Overall, per model and GPU, per model and concurrency band, per precision and engine."""
    by_gpu = report.summaries()
    by_band = report.summaries_by_band()
    return [
        Table("All predicted rows", ("group",), [["all", *figure_cells(s)] for s in report.overall()]),
        Table(
            "Per model and GPU",
            ("model", "GPU"),
            [[s.model, s.gpu, *figure_cells(s)] for s in by_gpu],
            frozenset(i for i, s in enumerate(by_gpu) if s.gpu == "all"),
        ),
        Table(
            "Per model and concurrency band",
            ("model", "concurrency"),
            [[s.model, s.band, *figure_cells(s)] for s in by_band],
            frozenset(i for i, s in enumerate(by_band) if s.model == "all"),
        ),
        Table(
            "Per model, GPU, precision and engine",
            ("model", "GPU", "precision", "engine"),
            [[*key, *figure_cells(s)] for key, s in report.summaries_by("row_precision", "backend")],
        ),
    ]


def skip_lines(report: Report) -> list[str]:
    return [f"{n:5d}  {why}" for why, n in _skips(report)]


def _skips(report: Report) -> list[tuple[str, int]]:
    return sorted(report.skipped.items(), key=lambda kv: (-kv[1], kv[0]))


def _counts(report: Report) -> str:
    n_skip = sum(report.skipped.values())
    return f"{report.rows} rows: {len(report.results)} predicted, {n_skip} skipped"


def _aligned(header: Sequence[str], rows: Sequence[Sequence[str]], left: int) -> str:
    widths = [max(len(c) for c in col) for col in zip(header, *rows, strict=True)]

    def line(cells: Sequence[str]) -> str:
        pairs = enumerate(zip(cells, widths, strict=True))
        return "  ".join(c.ljust(w) if i < left else c.rjust(w) for i, (c, w) in pairs)

    return "\n".join(line(cells) for cells in [header, *rows])


def text_table(report: Report) -> str:
    """Every table, as aligned plain text (ratio = predicted / measured; error as a factor)."""
    parts = []
    for t in tables(report):
        if t.rows:
            parts += [t.title, _aligned((*t.labels, *FIGURES), t.rows, len(t.labels)), ""]
    return "\n".join(parts).rstrip()


def print_report(report: Report, console: Console) -> None:
    """Terminal tables, then the skipped rows by reason."""
    from rich.table import Table as RichTable

    console.print(f"{report.source}: {_counts(report)} (aggregated rows; planner beside a naive roofline)")
    for t in tables(report):
        if not t.rows:
            continue
        rich = RichTable(title=f"AIC: {t.title}", title_justify="left")
        for col in t.labels:
            rich.add_column(col, no_wrap=True)
        for col in FIGURES:  # two-line headers keep the table within 140 columns
            rich.add_column(col.replace("roofline ", "roofline\n").replace(" ", "\n", 1), justify="right")
        for row in t.rows:
            rich.add_row(*row)
        console.print(rich)
    skipped = RichTable(title="AIC: skipped, by reason", title_justify="left")
    skipped.add_column("rows", justify="right")
    skipped.add_column("reason", overflow="fold")
    for why, n in _skips(report):
        skipped.add_row(str(n), why)
    console.print(skipped)


def _md_row(cells: Iterable[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def _md_table(t: Table) -> list[str]:
    out = [_md_row((*t.labels, *FIGURES)), _md_row(["---"] * len(t.labels) + ["---:"] * len(FIGURES))]
    for i, row in enumerate(t.rows):
        out.append(_md_row([f"**{c}**" for c in row] if i in t.totals else row))
    return out


def markdown(report: Report, command: str, day: datetime.date, findings: str = "") -> str:
    """The report; ``findings`` (a paragraph read off these numbers) goes after the band table."""
    out = [
        "# The performance model against aiconfigurator's silicon measurements",
        "",
        f"Generated by `{command}` on {day.isoformat()}; do not edit by hand.",
        f"Source: `{report.source.name}` ({_counts(report)} with a reason). "
        "Catalogs and model: as installed when this was generated.",
        "",
        _INTRO.strip(),
    ]
    for i, t in enumerate(tables(report)):
        out += ["", f"## {t.title}", ""]
        if i == 3:
            out += ["Engines and versions differ by tens of percent on the same hardware (README of the data).", ""]
        out += _md_table(t)
        if i == 2 and findings:
            out += ["", "## What the errors point at", "", findings.strip()]
    if report.uncalibrated:
        listed = ", ".join(sorted(report.uncalibrated))
        out += ["", f"Efficiency factors not fitted to measurements for: {listed}."]
    out += [
        "",
        "## Skipped rows, by reason",
        "",
        "Each row counts once, under the first reason that applies (disagg first, then model, GPU, ...).",
        "",
        _md_row(("rows", "reason")),
        _md_row(("---:", "---")),
        *(_md_row((str(n), why)) for why, n in _skips(report)),
        "",
        "## How rows become queries",
        "",
        RULES.strip(),
    ]
    if report.notes:
        out += ["", "Mappings that are the closest, not the same (applied to rows above):", ""]
        out += [f"- {note}" for note in sorted(report.notes)]
    return "\n".join(out) + "\n"


def report_json(report: Report) -> dict[str, Any]:
    return {
        "source": str(report.source),
        "rows": report.rows,
        "predicted": len(report.results),
        "overall": [s.to_dict() for s in report.overall()],
        "by_model_gpu": [s.to_dict() for s in report.summaries()],
        "by_model_band": [s.to_dict() for s in report.summaries_by_band()],
        "by_model_gpu_precision_engine": [
            {"precision": key[2], "engine": key[3], **s.to_dict()}
            for key, s in report.summaries_by("row_precision", "backend")
        ],
        "skipped_by_reason": dict(_skips(report)),
        "uncalibrated": sorted(report.uncalibrated),
        "notes": sorted(report.notes),
        "results": [r.to_dict() for r in report.results],
    }


_INTRO = """
Ratio = predicted / measured, the median over the group's rows (> 1: the model is slower than the
silicon). Error = exp(median |ln(predicted / measured)|), the issue's definition: 1.10x is a typical
row 10% off, 2.00x a factor 2 either way. TTFT is the mean time to first token at the row's
concurrency (a closed loop of N clients, so it includes queueing behind other prompts); TPOT the
mean time per output token.

Each figure of the planner stands beside a naive roofline's on the same rows, built from the same
model shapes at 100% of peak FLOPS and HBM bandwidth with no fixed costs, link time or queueing
(`planner/perf/calibration/aic_roofline.py`): TTFT is one prompt's prefill, its FLOPs at peak or
the weights it needs read once at peak bandwidth, whichever is slower; TPOT is one decode step at
the row's concurrency (weights touched plus every sequence's KV cache read, or its FLOPs,
whichever is slower). Concurrency bands: 1-8, 9-32, 33-128 and 129+ clients.

The same tables from the installed planner: `planner calibrate --aic PATH/aic_silicon.csv` prints
them after the `measured.csv` report (`--json` adds them under `aic`), and `--aic-markdown OUT`
writes this report (the table is not shipped with the package: give its path).
"""

RULES = """
Each `agg` row becomes the query `planner estimate inference --model M --gpu G --gpus T --precision P
--input-tokens ISL --output-tokens OSL --concurrency N` makes (the chassis with the fastest link that
holds the replica), plus the row's attention data parallelism (`InferenceQuery.attention_dp`).

- GPUs per replica T = `tp_size` x `attention_dp_size` (`pp_size` is 1 in every row). `batch_size`
is per attention-DP rank (`batch_size` x `attention_dp_size` = concurrency). `moe_tp_size` and
`moe_ep_size` are not used: the planner spreads the routed experts over all the replica's GPUs.
- A blank `attention_dp_size` counts as 1 only where `batch_size` equals the concurrency.
- N = `silicon_concurrency` from `silicon_data_source`, not `batch_size`.
- Models: Hugging Face id to catalog id by an explicit table in
`planner/perf/calibration/aic_mapping.py`; models not in the catalog (MiniMax-M2.5,
Qwen3.5-397B-A17B, GLM-5) are skipped, never matched by likeness.
- GPUs: h100_sxm H100-SXM, h200_sxm H200-SXM, b200_sxm B200, b300_sxm B300, gb200 GB200, gb300 GB300
(skipped while the catalog lacks the GPU).
- Precision: fp8, fp4 (NVFP4), bf16, int4 (weight-only INT4) as named. FP4 on a GPU without FP4
tensor cores is modelled only for an MXFP4 checkpoint (gpt-oss on Hopper: weight-only, bf16 compute).
- Skipped: disagg rows (separate prefill and decode workers; the planner has no disaggregated
model), replicas larger than one catalog server (e.g. `tp_size` 16 or 64 on 8-GPU HGX systems),
`tp_size` that does not divide the attention heads (e.g. 28 or 36 for DeepSeek's 128), and rows the
planner itself answers "does not fit". The roofline is asked only on the rows the planner predicts.
"""
