"""The performance model against aiconfigurator's silicon measurements (issue 13).

``shared/calibration/aic_silicon.csv`` holds measured mean TTFT and TPOT of serving runs at a
fixed concurrency (a closed loop of N clients). For every aggregated (``agg``) row this
script asks the planner's performance model the question ``planner estimate inference
--concurrency N`` asks, with the row's attention data parallelism, and reports per model and
GPU the median predicted / measured ratio and the median absolute log error.

    python benchmarks/aic_check.py                       # prints, writes docs/aic_check.md
    python benchmarks/aic_check.py --csv PATH --markdown /tmp/out.md

Rules (also written into the report):

- model: the Hugging Face id maps to a catalog id by the table ``MODELS`` below; ids not
  in it are skipped ("model not in catalog"), never matched by similarity;
- GPU: ``SYSTEMS`` below; a catalog without that GPU (yet) skips the row;
- precision: fp8, fp4 (NVFP4), bf16, fp16, int4 (weight-only) as the planner names them. FP4
  on a GPU without FP4 tensor cores is skipped, except for a checkpoint published in MXFP4
  (gpt-oss): engines run it weight-only there, which the planner expresses as bf16
  compute over weights it keeps in the checkpoint's 4.25 bits;
- GPUs per replica: ``tp_size x attention_dp_size x pp_size``. In these rows ``tp_size`` is
  the attention tensor-parallel degree inside one attention group and ``batch_size`` is per
  attention-DP rank (``batch_size x attention_dp_size = concurrency``).
  ``moe_tp_size``/``moe_ep_size`` are not used: the planner spreads the routed experts over
  all the replica's GPUs, and the dump often records 1 x 1 for runs that must shard them.
  A blank ``attention_dp_size`` counts as 1 only where ``batch_size`` equals the
  concurrency; otherwise the row is skipped. A replica larger than one catalog server, a
  ``tp_size`` that does not divide the attention heads, or pipeline parallelism is skipped;
- concurrency: ``silicon_concurrency=N`` from ``silicon_data_source`` (not ``batch_size``);
- rows the planner answers "does not fit" (KV cache, ``serving.max_batch``) are counted
  as skipped with that reason: the engine ran them, the model says it could not.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import functools
import math
import re
import shlex
import statistics
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from planner.catalog import Catalog, load_catalog
from planner.perf.calibration.mapping import Skip, chassis_for
from planner.perf.inference import InferenceEstimate, InferenceQuery, estimate_inference
from planner.perf.links import link_for
from planner.perf.precision import compute_precision
from planner.perf.shapes import ModelShape, shape_of

CSV_NAME = "aic_silicon.csv"
DEFAULT_CSV = Path(__file__).resolve().parents[2] / "shared" / "calibration" / CSV_NAME
DEFAULT_MARKDOWN = Path(__file__).resolve().parents[1] / "docs" / "aic_check.md"

# Hugging Face id (full match, case-insensitive) -> catalog model id, and a note when the
# catalog entry is the closest rather than the same model.
MODELS: tuple[tuple[str, str, str], ...] = (
    (r"deepseek-ai/DeepSeek-R1", "deepseek-r1", ""),
    (r"nvidia/DeepSeek-R1-NVFP4", "deepseek-r1", "NVIDIA's FP4 quantisation of DeepSeek-R1"),
    (r"deepseek-ai/DeepSeek-V3", "deepseek-v3", ""),
    (r"nvidia/DeepSeek-V3\.1-NVFP4", "deepseek-v3", "closest: DeepSeek-V3.1 keeps V3's architecture and shape"),
    (r"openai/gpt-oss-(20b|120b)", "gpt-oss-{0}", ""),
    (
        r"moonshotai/Kimi-K2(\.5)?(-Instruct|-Thinking)?(-\d+)?",
        "kimi-k2",
        "closest: catalog kimi-k2 is K2-Instruct; K2.5 keeps its 1T-parameter text model and adds a vision encoder",
    ),
    (r"Qwen/Qwen3-(8B|14B|32B|30B-A3B|235B-A22B)(-Instruct-\d+|-Thinking-\d+)?(-FP8)?", "qwen3-{0}", ""),
    (r"(meta-llama|nvidia)/(Meta-)?Llama-3\.1-(8B|70B|405B)(-Instruct)?(-FP8|-FP4)?", "llama-3.1-{2}", ""),
)

# aiconfigurator system name -> catalog GPU id
SYSTEMS = {
    "h100_sxm": "H100-SXM",
    "h200_sxm": "H200-SXM",
    "b200_sxm": "B200",
    "b300_sxm": "B300",
    "gb200": "GB200",
    "gb300": "GB300",
}

# the CSV's precision -> the planner's
PRECISIONS = {"fp8": "fp8", "fp4": "fp4", "nvfp4": "fp4", "bf16": "bf16", "fp16": "fp16", "int4": "int4"}


@dataclass(frozen=True)
class Case:
    """One row in the planner's terms: the query `planner estimate inference` would make."""

    model: str
    gpu: str
    precision: str
    input_tokens: int
    output_tokens: int
    gpus: int
    attention_dp: int
    concurrency: int


@dataclass(frozen=True)
class Result:
    row_id: str
    case: Case
    backend: str
    row_precision: str
    ttft_ratio: float  # predicted / measured
    tpot_ratio: float


@dataclass(frozen=True)
class Summary:
    model: str
    gpu: str  # "all" on a model's overall line
    count: int
    ttft_ratio: float  # medians
    ttft_log_error: float
    tpot_ratio: float
    tpot_log_error: float


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
        out: list[Summary] = []
        for model in sorted({r.case.model for r in self.results}):
            mine = [r for r in self.results if r.case.model == model]
            for gpu in sorted({r.case.gpu for r in mine}, key=_gpu_order):
                out.append(_summarize(model, gpu, [r for r in mine if r.case.gpu == gpu]))
            out.append(_summarize(model, "all", mine))
        return out

    def summaries_by(self, *keys: str) -> list[tuple[tuple[str, ...], Summary]]:
        """Finer groups (e.g. precision and engine) inside each (model, GPU)."""
        groups: dict[tuple[str, ...], list[Result]] = {}
        for r in self.results:
            key = (r.case.model, r.case.gpu, *(str(getattr(r, k)) for k in keys))
            groups.setdefault(key, []).append(r)
        order = sorted(groups, key=lambda k: (k[0], _gpu_order(k[1]), *k[2:]))
        return [(k, _summarize(k[0], k[1], groups[k])) for k in order]


def _gpu_order(gpu: str) -> tuple[int, str]:
    ids = list(SYSTEMS.values())
    return (ids.index(gpu) if gpu in ids else len(ids), gpu)


def _summarize(model: str, gpu: str, results: Sequence[Result]) -> Summary:
    ttft = [r.ttft_ratio for r in results]
    tpot = [r.tpot_ratio for r in results]
    return Summary(
        model=model,
        gpu=gpu,
        count=len(results),
        ttft_ratio=statistics.median(ttft),
        ttft_log_error=statistics.median(abs(math.log(x)) for x in ttft),
        tpot_ratio=statistics.median(tpot),
        tpot_log_error=statistics.median(abs(math.log(x)) for x in tpot),
    )


# --- from a row to a query -------------------------------------------------------------


def catalog_model(hf_id: str, catalog: Catalog) -> tuple[str, str]:
    """Catalog model id and a note (empty unless the entry is only the closest)."""
    for pattern, target, note in MODELS:
        found = re.fullmatch(pattern, hf_id.strip(), flags=re.IGNORECASE)
        if found:
            model_id = target.format(*(g or "" for g in found.groups())).lower()
            if catalog.find_model_id(model_id) is None:
                raise Skip(f"catalog has no model {model_id} (for {hf_id})")
            return model_id, note
    raise Skip(f"model not in catalog: {hf_id}")


def _int(text: str, what: str) -> int:
    try:
        value = float(text)
    except ValueError:
        raise Skip(f"{what} not recorded") from None
    if not value.is_integer() or value < 1:
        raise Skip(f"{what} not a positive integer")
    return int(value)


def concurrency_of(source: str) -> int:
    found = re.search(r"silicon_concurrency=(\d+)", source)
    if found is None:
        raise Skip("silicon_concurrency not recorded")
    return int(found.group(1))


def _precision(row_precision: str, gpu_id: str, shape: ModelShape, catalog: Catalog) -> tuple[str, str]:
    text = row_precision.strip().lower()
    if not text:
        raise Skip("precision not recorded")
    if text not in PRECISIONS:
        raise Skip(f"precision {text} not modelled")
    precision = PRECISIONS[text]
    gpu = catalog.gpus[gpu_id]
    if compute_precision(gpu, precision) is not None:
        return precision, ""
    if precision == "fp4" and "mxfp4" in (shape.experts_format, shape.weights_format):
        return "bf16", f"{shape.name} fp4 on {gpu_id} (no FP4 tensor cores): weight-only MXFP4, queried as bf16"
    raise Skip(f"{text} on a GPU without {precision} tensor cores")


def to_case(row: dict[str, str], catalog: Catalog) -> tuple[Case, list[str]]:
    """The planner's query for an agg row, and the mapping notes that applied; else ``Skip``."""
    if row["mode"].strip() != "agg":
        raise Skip("disagg (separate prefill and decode workers): not modelled")
    model_id, model_note = catalog_model(row["model_path"], catalog)
    system = row["system"].strip()
    if system not in SYSTEMS:
        raise Skip(f"system {system} not mapped")
    gpu_id = catalog.find_gpu_id(SYSTEMS[system])
    if gpu_id is None:
        raise Skip(f"catalog has no GPU {SYSTEMS[system]}")
    shape = shape_of(model_id, catalog)
    precision, precision_note = _precision(row["precision"], gpu_id, shape, catalog)
    concurrency = concurrency_of(row["silicon_data_source"])
    if _int(row["pp_size"] or "1", "pp_size") > 1:
        raise Skip("pipeline parallelism not modelled")
    tp = _int(row["tp_size"], "tp_size")
    if row["attention_dp_size"].strip():
        dp = _int(row["attention_dp_size"], "attention_dp_size")
    elif row["batch_size"].strip() and float(row["batch_size"]) == concurrency:
        dp = 1  # the whole concurrency is one attention group's batch
    else:
        raise Skip("attention_dp_size not recorded (batch_size != concurrency)")
    gpus = tp * dp
    gpu = catalog.gpus[gpu_id]
    chassis_for(catalog, gpu, gpus)  # raises Skip when no catalog server holds the replica
    if shape.attention_heads and shape.attention_heads % tp:
        raise Skip("tp_size does not divide the attention heads")
    for name in ("silicon_ttft_ms", "silicon_tpot_ms"):
        try:
            if not float(row[name]) > 0:
                raise Skip(f"{name} not positive")
        except ValueError:
            raise Skip(f"{name} not recorded") from None
    case = Case(
        model=model_id,
        gpu=gpu_id,
        precision=precision,
        input_tokens=_int(row["isl"], "isl"),
        output_tokens=_int(row["osl"], "osl"),
        gpus=gpus,
        attention_dp=dp,
        concurrency=concurrency,
    )
    return case, [n for n in (model_note and f"{row['model_path']} -> {model_id}: {model_note}", precision_note) if n]


@functools.cache
def _estimate(case: Case) -> InferenceEstimate:
    catalog = load_catalog()
    gpu = catalog.gpus[case.gpu]
    chassis = chassis_for(catalog, gpu, case.gpus)
    query = InferenceQuery(
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
    eff = catalog.efficiency
    return estimate_inference(query, eff.generations[gpu.generation], eff.serving)


def _does_not_fit(est: InferenceEstimate, case: Case, catalog: Catalog) -> str:
    if "concurrency" in est.reason:
        if case.concurrency > catalog.efficiency.serving.max_batch:
            return f"planner: concurrency above serving.max_batch ({catalog.efficiency.serving.max_batch})"
        return "planner: concurrency above what the KV cache holds"
    if est.reason.startswith("needs"):
        return "planner: weights and one request's KV cache do not fit"
    return f"planner: {est.reason}"


def check(rows: Iterable[dict[str, str]], source: Path) -> Report:
    catalog = load_catalog()
    report = Report(source=source, rows=0)
    for row in rows:
        report.rows += 1
        try:
            case, notes = to_case(row, catalog)
        except Skip as why:
            report.skipped[str(why)] += 1
            continue
        est = _estimate(case)
        if not est.fits:
            report.skipped[_does_not_fit(est, case, catalog)] += 1
            continue
        report.notes.update(notes)
        if est.factors.get("calibrated") != "yes":
            report.uncalibrated.add(f"{case.gpu} ({est.factors.get('generation')})")
        report.results.append(
            Result(
                row_id=row["id"],
                case=case,
                backend=row["backend"],
                row_precision=row["precision"],
                ttft_ratio=est.ttft_ms / float(row["silicon_ttft_ms"]),
                tpot_ratio=est.tpot_ms / float(row["silicon_tpot_ms"]),
            )
        )
    return report


# --- output ----------------------------------------------------------------------------

HEADER = ("model", "GPU", "rows", "TTFT ratio", "TTFT |ln|", "TPOT ratio", "TPOT |ln|")


def _cells(s: Summary, label: Sequence[str] | None = None) -> list[str]:
    return [
        *(label or (s.model, s.gpu)),
        str(s.count),
        f"{s.ttft_ratio:.2f}",
        f"{s.ttft_log_error:.2f}",
        f"{s.tpot_ratio:.2f}",
        f"{s.tpot_log_error:.2f}",
    ]


def text_table(report: Report) -> str:
    lines = [_cells(s) for s in report.summaries()]
    widths = [max(len(c) for c in col) for col in zip(HEADER, *lines, strict=False)]

    def line(cells: Sequence[str]) -> str:
        pairs = enumerate(zip(cells, widths, strict=True))
        return "  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in pairs)

    return "\n".join(line(cells) for cells in [HEADER, *lines])


def _md_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def _skip_lines(report: Report) -> list[str]:
    return [f"{n:5d}  {why}" for why, n in sorted(report.skipped.items(), key=lambda kv: (-kv[1], kv[0]))]


def markdown(report: Report, command: str, day: datetime.date) -> str:
    n_skip = sum(report.skipped.values())
    out = [
        "# The performance model against aiconfigurator's silicon measurements",
        "",
        f"Generated by `{command}` on {day.isoformat()}; do not edit by hand.",
        f"Source: `{report.source.name}` ({report.rows} rows; {len(report.results)} predicted, "
        f"{n_skip} skipped with a reason). Catalogs and model: as installed when this was generated.",
        "",
        "Ratio = predicted / measured, the median over the group's rows (> 1: the model is slower than the",
        "silicon). |ln| is the median of |ln(predicted / measured)|: 0.10 is about 10% off, 0.69 a factor 2",
        "either way. TTFT is the mean time to first token at the row's concurrency (a closed loop of N",
        "clients, so it includes queueing behind other prompts); TPOT the mean time per output token.",
        "",
        "## Per model and GPU",
        "",
        _md_row(HEADER),
        _md_row(["---"] * 2 + ["---:"] * 5),
    ]
    for s in report.summaries():
        cells = _cells(s)
        if s.gpu == "all":
            cells = [f"**{cells[0]}**", "**all**", *(f"**{c}**" for c in cells[2:])]
        out.append(_md_row(cells))
    out += [
        "",
        "## Per model, GPU, precision and engine",
        "",
        "Engines and versions differ by tens of percent on the same hardware (README of the data).",
        "",
        _md_row(("model", "GPU", "precision", "engine", *HEADER[2:])),
        _md_row(["---"] * 4 + ["---:"] * 5),
    ]
    for key, s in report.summaries_by("row_precision", "backend"):
        out.append(_md_row(_cells(s, key)))
    if report.uncalibrated:
        out += [
            "",
            "Efficiency factors not fitted to measurements for: " + ", ".join(sorted(report.uncalibrated)) + ".",
        ]
    out += [
        "",
        "## Skipped rows, by reason",
        "",
        "Each row counts once, under the first reason that applies (disagg first, then model, GPU, ...).",
        "",
        _md_row(("rows", "reason")),
        _md_row(("---:", "---")),
    ]
    for why, n in sorted(report.skipped.items(), key=lambda kv: (-kv[1], kv[0])):
        out.append(_md_row((str(n), why)))
    out += ["", "## How rows become queries", "", _RULES.strip()]
    if report.notes:
        out += ["", "Mappings that are the closest, not the same (applied to rows above):", ""]
        out += [f"- {note}" for note in sorted(report.notes)]
    return "\n".join(out) + "\n"


_RULES = """
Each `agg` row becomes the query `planner estimate inference --model M --gpu G --gpus T --precision P
--input-tokens ISL --output-tokens OSL --concurrency N` makes (the chassis with the fastest link that
holds the replica), plus the row's attention data parallelism (`InferenceQuery.attention_dp`).

- GPUs per replica T = `tp_size` x `attention_dp_size` (`pp_size` is 1 in every row). `batch_size`
is per attention-DP rank (`batch_size` x `attention_dp_size` = concurrency). `moe_tp_size` and
`moe_ep_size` are not used: the planner spreads the routed experts over all the replica's GPUs.
- A blank `attention_dp_size` counts as 1 only where `batch_size` equals the concurrency.
- N = `silicon_concurrency` from `silicon_data_source`, not `batch_size`.
- Models: Hugging Face id to catalog id by an explicit table in `benchmarks/aic_check.py`; models
not in the catalog (MiniMax-M2.5, Qwen3.5-397B-A17B, GLM-5) are skipped, never matched by likeness.
- GPUs: h100_sxm H100-SXM, h200_sxm H200-SXM, b200_sxm B200, b300_sxm B300, gb200 GB200, gb300 GB300
(skipped while the catalog lacks the GPU).
- Precision: fp8, fp4 (NVFP4), bf16, int4 (weight-only INT4) as named. FP4 on a GPU without FP4
tensor cores is modelled only for an MXFP4 checkpoint (gpt-oss on Hopper: weight-only, bf16 compute).
- Skipped: disagg rows (separate prefill and decode workers; the planner has no disaggregated
model), replicas larger than one catalog server (e.g. `tp_size` 16 or 64 on 8-GPU HGX systems),
`tp_size` that does not divide the attention heads (e.g. 28 or 36 for DeepSeek's 128), and rows the
planner itself answers "does not fit".
"""


def main(argv: Sequence[str] | None = None) -> Report:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", type=Path, default=DEFAULT_CSV, help=f"the measurements (default: {DEFAULT_CSV})")
    parser.add_argument(
        "--markdown", type=Path, default=DEFAULT_MARKDOWN, help="write the report here (default: docs/aic_check.md)"
    )
    parser.add_argument("--no-markdown", action="store_true", help="print only")
    args = parser.parse_args(argv)
    with args.csv.open(newline="", encoding="utf-8") as f:
        report = check(csv.DictReader(f), args.csv)
    print(text_table(report))
    print(f"\n{report.rows} rows: {len(report.results)} predicted, {sum(report.skipped.values())} skipped:")
    print("\n".join(_skip_lines(report)))
    if not args.no_markdown:
        words = ["python", "benchmarks/aic_check.py", *(argv if argv is not None else sys.argv[1:])]
        args.markdown.write_text(markdown(report, shlex.join(words), datetime.date.today()), encoding="utf-8")
        print(f"\nwrote {args.markdown}")
    return report


if __name__ == "__main__":
    main()
