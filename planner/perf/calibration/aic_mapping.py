"""From an aiconfigurator silicon row to the planner's query (``planner calibrate --aic``).

Rules (also written into the report, ``aic_render.RULES``):

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
- concurrency: ``silicon_concurrency=N`` from ``silicon_data_source`` (not ``batch_size``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from planner.catalog import Catalog
from planner.perf.calibration.mapping import Skip, chassis_for
from planner.perf.precision import compute_precision
from planner.perf.shapes import ModelShape, shape_of

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

# the columns the mapping reads; a table without one of them is not an aiconfigurator dump
COLUMNS = (
    "id",
    "silicon_data_source",
    "backend",
    "model_path",
    "system",
    "precision",
    "mode",
    "isl",
    "osl",
    "batch_size",
    "tp_size",
    "pp_size",
    "attention_dp_size",
    "silicon_ttft_ms",
    "silicon_tpot_ms",
)

# concurrency bands of the report: (label, lowest, highest)
BANDS: tuple[tuple[str, int, float], ...] = (
    ("1-8", 1, 8),
    ("9-32", 9, 32),
    ("33-128", 33, 128),
    ("129+", 129, float("inf")),
)


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

    @property
    def band(self) -> str:
        return band_of(self.concurrency)


def band_of(concurrency: int) -> str:
    return next(label for label, low, high in BANDS if low <= concurrency <= high)


def gpu_order(gpu: str) -> tuple[int, str]:
    """GPUs in the order of ``SYSTEMS`` (by generation), others after."""
    ids = list(SYSTEMS.values())
    return (ids.index(gpu) if gpu in ids else len(ids), gpu)


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


def _number(text: str, what: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise Skip(f"{what} not recorded") from None


def _int(text: str, what: str) -> int:
    value = _number(text, what)
    if not value.is_integer() or value < 1:
        raise Skip(f"{what} not a positive integer")
    return int(value)


def concurrency_of(source: str) -> int:
    found = re.search(r"silicon_concurrency=(\d+)", source)
    if found is None or int(found.group(1)) < 1:
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


def measured_ms(row: dict[str, str]) -> tuple[float, float]:
    """The row's measured mean TTFT and TPOT; ``Skip`` when either is missing or not positive."""
    out = []
    for name in ("silicon_ttft_ms", "silicon_tpot_ms"):
        value = _number(row[name], name)
        if not value > 0:  # also NaN
            raise Skip(f"{name} not positive")
        out.append(value)
    return out[0], out[1]


@dataclass(frozen=True)
class RowTerms:
    """What every aiconfigurator row maps to, aggregated or disaggregated alike."""

    model: str
    gpu: str
    shape: ModelShape
    precision: str
    concurrency: int
    notes: list[str]  # the mapping notes that applied


def row_terms(row: dict[str, str], catalog: Catalog) -> RowTerms:
    """The row's model, GPU, precision and concurrency in the planner's terms; else ``Skip``."""
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
    notes = [n for n in (model_note and f"{row['model_path']} -> {model_id}: {model_note}", precision_note) if n]
    return RowTerms(model_id, gpu_id, shape, precision, concurrency, notes)


def to_case(row: dict[str, str], catalog: Catalog) -> tuple[Case, list[str]]:
    """The planner's query for an agg row, and the mapping notes that applied; else ``Skip``."""
    if row["mode"].strip() != "agg":
        raise Skip("disagg (separate prefill and decode workers): not modelled")
    t = row_terms(row, catalog)
    model_id, gpu_id, shape, precision, concurrency = t.model, t.gpu, t.shape, t.precision, t.concurrency
    if _int(row["pp_size"] or "1", "pp_size") > 1:
        raise Skip("pipeline parallelism not modelled")
    tp = _int(row["tp_size"], "tp_size")
    if row["attention_dp_size"].strip():
        dp = _int(row["attention_dp_size"], "attention_dp_size")
    elif row["batch_size"].strip() and _number(row["batch_size"], "batch_size") == concurrency:
        dp = 1  # the whole concurrency is one attention group's batch
    else:
        raise Skip("attention_dp_size not recorded (batch_size != concurrency)")
    gpus = tp * dp
    chassis_for(catalog, catalog.gpus[gpu_id], gpus)  # raises Skip when no catalog server holds the replica
    if shape.attention_heads and shape.attention_heads % tp:
        raise Skip("tp_size does not divide the attention heads")
    measured_ms(row)
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
    return case, t.notes
