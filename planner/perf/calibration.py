"""`planner calibrate`: the performance model run against published measurements.

Each row of a measurement table (by default the bundled ``calibration/measured.csv``)
is mapped to the query the planner would make for that setup — catalog GPU,
model shape, precision, lengths, batch, tensor-parallel degree — and answered by
the same functions ``planner estimate`` uses (``estimate_inference``,
``estimate_training`` with the catalog's efficiency factors). The report gives
predicted / measured per row and, per family, per GPU generation and precision
and per scenario: count, median ratio, median |ratio - 1| and the worst ratio.

Nothing here changes a factor: the harness only measures how far the catalog's
current factors are from the published figures. A row the model cannot express
is kept with an explicit ``skipped`` reason, never dropped.
"""

from __future__ import annotations

import csv
import io
import math
import re
import statistics
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from planner.catalog import Catalog, load_catalog
from planner.errors import InputError
from planner.options import link_for
from planner.perf.inference import InferenceEstimate, InferenceQuery, estimate_inference
from planner.perf.shapes import ModelShape, shape_of
from planner.perf.training import TrainingQuery, estimate_training
from planner.schema.catalog import Gpu, ServerChassis
from planner.schema.problem import InlineModel

if TYPE_CHECKING:
    from rich.console import Console

COLUMNS = (
    "id",
    "kind",
    "source",
    "model",
    "params_b",
    "gpu",
    "n_gpus",
    "precision",
    "framework",
    "input_tokens",
    "output_tokens",
    "batch_or_concurrency",
    "metric",
    "value",
    "notes",
)

# MLPerf Inference llama2-70b Server latency constraints (inference_rules.adoc: TTFT/TPOT
# 2000 ms / 200 ms, both at p99). The model has one latency, not a distribution, so it
# takes them as targets for its mean: the largest batch that meets both.
MLPERF_SERVER_TTFT_MS = 2000.0
MLPERF_SERVER_TPOT_MS = 200.0

# MLPerf llama2-70b OpenOrca set (24,576 samples, inputs capped at 1,024 tokens by processorca.py
# --seqlen_limit=1024, mlcommons/inference language/llama2-70b/README.md). Mean input: 222 tokens
# = 5,463,976 input tokens / 24,576 samples (min 48, max 1,021), the length statistics of the
# official pickle (open_orca_gpt4_tokenized_llama.sampled_24576.pkl.gz, sha256 ec34d70f...754c)
# recorded in FlashLab-MBZUAI/HBFSim validation/calibration/h100-llama2-70b-calibration-protocol.json
# @96cf1b3. MLCommons publishes no mean input itself. Output: each submission's log gives its
# own mean generated tokens (parsed from the row's notes); otherwise the README's ~292 (the
# reference run generated 294.45 tokens per sample; the GPT-4 references average 219).
OPENORCA_INPUT_TOKENS = 222
OPENORCA_OUTPUT_TOKENS = 292  # calibration/README.md: "~292 output tokens mean"

# Model cards state GPU-hours but not the job size; scaling depends on it only weakly
# (2% per doubling of servers), so unstated sizes use one assumed figure, named in the row.
ASSUMED_TRAINING_GPUS = 2048
DEFAULT_SEQ_LEN = 4096
GPUS_PER_SERVER = 8  # every training row ran on 8-GPU HGX/DGX-class servers
_THROUGHPUT_TOKENS = 1e12  # any token count: per-second figures do not depend on it

# Source names of the GPU -> catalog id. Rows on other hardware are skipped ("no catalog GPU").
GPU_ALIASES = {
    "H100-SXM-80GB": "H100-SXM",
    "H200-SXM-141GB": "H200-SXM",
    "MI300X-192GB": "MI300X",
    "B200-180GB": "B200",
    "L40S-48GB": "L40S",
    "L4-24GB": "L4",
    # Sources say "A100-80GB" / "A100" / "A100-80G"; TensorRT-LLM, lmdeploy, Megatron (Selene),
    # OPT, BLOOM and Meta all ran SXM4 boards.
    "A100-80GB": "A100-SXM-80GB",
    "A100-SXM-80GB": "A100-SXM-80GB",
}

# Model names as sources spell them -> catalog id (searched in order, on a normalised name).
# Llama 3 and 3.1 share a shape; TensorRT-LLM's "LLaMA 7B/70B" rows have Llama 2's shapes.
MODEL_ALIASES: tuple[tuple[str, str], ...] = (
    (r"gpt-?j", "gpt-j-6b"),
    (r"gpt-?3-?175b", "gpt-3-175b"),
    (r"llama-?3(\.1)?-?8b", "llama-3.1-8b"),
    (r"llama-?3(\.1)?-?70b", "llama-3.1-70b"),
    (r"llama-?3(\.1)?-?405b", "llama-3.1-405b"),
    (r"llama-?(2-?)?7b", "llama-2-7b"),
    (r"llama-?(2-?)?13b", "llama-2-13b"),
    (r"llama-?(2-?)?70b", "llama-2-70b"),
)

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


class Skip(Exception):
    """A row the model cannot express; the message is the reason shown in the report."""


@dataclass(frozen=True)
class Measurement:
    id: str
    kind: str
    source: str
    model: str
    params_b: str
    gpu: str
    n_gpus: str
    precision: str
    framework: str
    input_tokens: str
    output_tokens: str
    batch_or_concurrency: str
    metric: str
    value: float
    notes: str


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


# ----------------------------------------------------------------------------- loading


def bundled_csv_text() -> str:
    return (resources.files("planner") / "calibration" / "measured.csv").read_text(encoding="utf-8")


def load_measurements(path: Path | None = None) -> tuple[str, list[Measurement]]:
    """The measurement table at ``path`` (default: the bundled copy) and its name for the report."""
    if path is None:
        return "planner/calibration/measured.csv (bundled)", parse_measurements(bundled_csv_text(), "measured.csv")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("file not found", file=str(path)) from None
    except UnicodeDecodeError:
        raise InputError("not a UTF-8 text file", file=str(path)) from None
    return str(path), parse_measurements(text, str(path))


def parse_measurements(text: str, name: str) -> list[Measurement]:
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise InputError(f"missing column(s): {', '.join(missing)}", file=name, hint=f"expected {','.join(COLUMNS)}")
    out: list[Measurement] = []
    for line, row in enumerate(reader, start=2):
        try:
            value = float(row["value"])
        except (TypeError, ValueError):
            raise InputError(f"value {row['value']!r} is not a number", file=name, line=line, key="value") from None
        out.append(Measurement(**{c: (row[c] or "").strip() for c in COLUMNS if c != "value"}, value=value))
    return out


# ----------------------------------------------------------------------------- mapping


def _norm(text: str) -> str:
    return re.sub(r"[\s_]+", "-", text.strip().lower())


def catalog_gpu(catalog: Catalog, name: str) -> Gpu:
    gpu_id = GPU_ALIASES.get(name) or catalog.find_gpu_id(name)
    if gpu_id is None or gpu_id not in catalog.gpus:
        raise Skip(f"no catalog GPU: {name}")
    return catalog.gpus[gpu_id]


def model_shape(catalog: Catalog, m: Measurement) -> ModelShape:
    name = _norm(m.model)
    for pattern, model_id in MODEL_ALIASES:
        if re.search(pattern, name):
            return shape_of(model_id, catalog)
    try:
        params_b = float(m.params_b)
    except ValueError:
        raise Skip(f"unknown model size: {m.model!r}, params_b {m.params_b!r}") from None
    return shape_of(InlineModel(params_b=params_b), catalog)


def inference_precision(m: Measurement, gpu: Gpu) -> str:
    text = m.precision.lower()
    if "fp4" in text:
        return "fp4"
    if "fp8" in text:
        if "fp8" not in gpu.tflops_dense:
            # vLLM runs FP8 checkpoints weight-only on Ampere; the model has no weight-only FP8 path.
            raise Skip(f"weight-only FP8 not modelled: {gpu.id} has no FP8 tensor cores")
        return "fp8"
    if "bf16" in text:
        return "bf16"
    if "fp16" in text:
        return "fp16"
    raise Skip(f"precision not stated: {m.precision!r}")


def training_precision(m: Measurement) -> tuple[str, str]:
    """Precision and a note when it had to be assumed (mixed-precision runs compute in 16 bit)."""
    text = m.precision.lower()
    if "fp8" in text:
        return "fp8", ""
    if "bf16" in text and "presumed" not in text:
        return "bf16", ""
    return "bf16", f"precision {m.precision!r} taken as bf16"


def _int_or_none(text: str) -> int | None:
    return int(text) if re.fullmatch(r"\d+", text.strip()) else None


def _first(pattern: str, text: str) -> int | None:
    found = re.search(pattern, text, flags=re.IGNORECASE)
    return int(found.group(1)) if found else None


@dataclass(frozen=True)
class Deployment:
    """How the GPUs of a row were used: replicas of ``tp`` GPUs, each with a batch (or None)."""

    tp: int | None
    replicas: int | None
    batch: int | None


def parse_deployment(text: str) -> Deployment:
    """Parse e.g. "4 instances x TP2; gpu_batch_size 896", "batch 1024; TP1", "TP1; server load"."""
    batch = _first(r"gpu_batch_size\s+(\d+)", text) or _first(r"\bbatch\s+(\d+)", text)
    return Deployment(
        tp=_first(r"\bTP\s*(\d+)", text),
        replicas=_first(r"(\d+)\s+instances", text),
        batch=batch,
    )


def scenario_of(m: Measurement) -> str:
    text = f"{m.notes} {m.framework}".lower()
    if "mlperf offline" in text or "mlperf gptj offline" in text:
        return "MLPerf Offline"
    if "mlperf server" in text:
        return "MLPerf Server"
    if "gptsessionbenchmark" in text:
        return "TRT-LLM batch-1 latency" if "low-latency" in text else "TRT-LLM static batch"
    if "lmdeploy" in text:
        return "lmdeploy static batch"
    if "vllm" in text:
        return "vLLM serving benchmark"
    if "nemo" in text:
        return "NeMo benchmark"
    if m.metric in ("gpu_hours", "wall_clock_hours"):
        return "model card / paper totals"
    return "paper (large run)"


def mean_outputs_by_source(measurements: Iterable[Measurement]) -> dict[str, int]:
    """Mean generated tokens per MLPerf log, from whichever row of that log states it.

    A log's throughput row notes "mean output tokens/sample=291.9"; its TTFT and TPOT rows
    (same source) do not, and must be modelled with the same request shape.
    """
    out: dict[str, int] = {}
    for m in measurements:
        found = re.search(r"mean output tokens/sample=(\d+(?:\.\d+)?)", m.notes)
        if found:
            out[m.source] = round(float(found.group(1)))
    return out


def lengths(m: Measurement, mean_outputs: dict[str, int]) -> tuple[int, int, str]:
    """Input and output tokens per request, with a note when they are the dataset's means."""
    if "openorca" in m.input_tokens.lower():
        out = mean_outputs.get(m.source, OPENORCA_OUTPUT_TOKENS)
        return OPENORCA_INPUT_TOKENS, out, f"OpenOrca means: input {OPENORCA_INPUT_TOKENS}, output {out}"
    n_in, n_out = _int_or_none(m.input_tokens), _int_or_none(m.output_tokens)
    if n_in is None or n_out is None:
        raise Skip(f"lengths not stated: input {m.input_tokens!r}, output {m.output_tokens!r}")
    return n_in, n_out, ""


def chassis_for(catalog: Catalog, gpu: Gpu, tp: int) -> ServerChassis:
    """The chassis with the fastest GPU link holding the GPU (as ``planner estimate`` picks)."""
    fits = [s for s in catalog.servers.values() if gpu.id in s.gpus and s.gpus_per_server >= tp]
    if not fits:
        raise Skip(f"no catalog server holds {tp} x {gpu.id} in one replica")
    return max(fits, key=lambda s: (link_for(s, gpu, tp).gb_per_s_one_way, s.gpus_per_server, s.id))


# ----------------------------------------------------------------------------- inference


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
        q = _query(catalog, s, tp, tpot_ms=MLPERF_SERVER_TPOT_MS, ttft_ms=MLPERF_SERVER_TTFT_MS)
        notes.append(f"largest batch meeting TTFT<={MLPERF_SERVER_TTFT_MS:g} ms, TPOT<={MLPERF_SERVER_TPOT_MS:g} ms")
    else:
        q = _query(catalog, s, tp)
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
    n_gpus = _int_or_none(m.n_gpus)
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


# ----------------------------------------------------------------------------- training


def _training_gpus(m: Measurement) -> tuple[int, str]:
    n = _int_or_none(m.n_gpus) or _first(r"(\d+)", m.n_gpus)
    if n is not None:
        return n, "" if _int_or_none(m.n_gpus) else f"{n} GPUs (from {m.n_gpus!r})"
    return ASSUMED_TRAINING_GPUS, f"{ASSUMED_TRAINING_GPUS} GPUs assumed (not stated)"


def _training_tokens(m: Measurement) -> float:
    """Tokens trained on, from the notes ("2.0T tokens", "15T+ pretraining tokens", "366B training tokens")."""
    found = re.search(r"(\d+(?:\.\d+)?)\s*([TB])\+?\s+(?:pretraining\s+|training\s+)?tokens", f"{m.notes} {m.model}")
    if not found:
        raise Skip("tokens not stated: GPU-hours cannot be predicted")
    return float(found.group(1)) * (1e12 if found.group(2) == "T" else 1e9)


def predict_training(catalog: Catalog, m: Measurement, gpu: Gpu) -> tuple[float, str]:
    totals = m.metric in ("gpu_hours", "wall_clock_hours")
    tokens = _training_tokens(m) if totals else _THROUGHPUT_TOKENS
    shape = model_shape(catalog, m)
    gpus, gpus_note = _training_gpus(m)
    precision, precision_note = training_precision(m)
    seq = _first(r"seq\s+(\d+)", m.input_tokens)
    seq_note = "" if seq else f"seq {DEFAULT_SEQ_LEN} assumed"
    method = "lora" if "lora" in m.model.lower() else "full"
    chassis = chassis_for(catalog, gpu, min(gpus, GPUS_PER_SERVER))
    per = chassis.gpus_per_server
    fabric = catalog.fabrics["ib-ndr" if gpus > per else "none"]  # as `planner estimate training`
    q = TrainingQuery(
        model=shape,
        gpu=gpu,
        gpus=gpus,
        tokens=tokens,
        precision=precision,
        method=method,
        fabric=fabric,
        gpus_per_server=per,
        gpu_link=link_for(chassis, gpu, min(gpus, per)).kind,
        seq_len=seq or DEFAULT_SEQ_LEN,
    )
    eff = catalog.efficiency
    est = estimate_training(q, eff.generations[gpu.generation], eff.training, eff.serving.memory_reserve_fraction)
    if not est.fits:
        raise Skip(f"model infeasible: {est.reason}")
    seconds = est.days * 86_400  # wall time, goodput included (what GPU-hours rows count)
    steady = seconds * est.goodput  # what throughput rows measure
    values: dict[str, Callable[[], float]] = {
        "tokens_per_s_per_gpu": lambda: tokens / steady / gpus,
        "tflops_per_gpu": lambda: est.tflops_per_gpu,
        "aggregate_pflops": lambda: est.tflops_per_gpu * gpus / 1e3,
        "mfu_pct": lambda: est.mfu * 100,
        "hfu_pct": lambda: est.mfu * 100,
        "pct_of_peak_per_gpu": lambda: est.mfu * 100,
        "gpu_hours": lambda: seconds / 3600 * gpus,
        "wall_clock_hours": lambda: seconds / 3600,
    }
    if m.metric not in values:
        raise Skip(f"metric {m.metric!r} not modelled")
    notes = [f"{shape.name} {method} {est.factors.get('compute_precision')} on {gpus} x {gpu.id}"]
    notes += [n for n in (gpus_note, precision_note, seq_note) if n]
    notes.append(f"MFU {est.mfu:.3f} (incl. scaling {est.scaling:.3f})")
    if m.metric in ("hfu_pct", "pct_of_peak_per_gpu"):
        notes.append("model MFU against a hardware-FLOP figure (counts recomputation)")
    if totals:
        notes.append(f"{tokens:.3g} tokens")
    return values[m.metric](), "; ".join(notes)


# ----------------------------------------------------------------------------- the harness


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


# ----------------------------------------------------------------------------- summaries


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


def report_json(report: Report) -> dict[str, Any]:
    return {
        "source": report.source,
        "assumptions": assumptions(),
        "families": [s.to_dict() for s in family_summaries(report)],
        "by_generation_precision": [s.to_dict() for s in generation_summaries(report)],
        "by_scenario": [s.to_dict() for s in scenario_summaries(report)],
        "worst": [r.to_dict() for r in worst_rows(report)],
        "skipped_by_reason": skip_counts(report),
        "rows": [r.to_dict() for r in report.rows],
    }


def assumptions() -> dict[str, float | int]:
    return {
        "mlperf_server_ttft_ms": MLPERF_SERVER_TTFT_MS,
        "mlperf_server_tpot_ms": MLPERF_SERVER_TPOT_MS,
        "openorca_input_tokens": OPENORCA_INPUT_TOKENS,
        "openorca_output_tokens_default": OPENORCA_OUTPUT_TOKENS,
        "assumed_training_gpus": ASSUMED_TRAINING_GPUS,
        "default_seq_len": DEFAULT_SEQ_LEN,
    }


# ----------------------------------------------------------------------------- rendering

SUMMARY_HEADER = ("group", "n", "median ratio", "median |err|", "worst ratio", "worst row")
ROW_HEADER = ("id", "gpu", "precision", "model", "metric", "measured", "predicted", "ratio")


def _num(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def summary_cells(s: Summary) -> list[str]:
    return [
        s.group,
        str(s.count),
        f"{s.median_ratio:.2f}",
        f"{s.median_abs_error:.0%}",
        f"{s.worst_ratio:.2f}",
        s.worst_id,
    ]


def row_cells(r: RowResult) -> list[str]:
    return [
        r.id,
        r.gpu,
        r.precision,
        r.model,
        r.metric,
        _num(r.measured),
        _num(r.predicted) if r.predicted is not None else "-",
        f"{r.ratio:.2f}" if r.ratio is not None else "-",
    ]


def _md_row(cells: Iterable[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def _md_table(header: Iterable[str], rows: Iterable[list[str]]) -> str:
    head = list(header)
    return "\n".join([_md_row(head), "|" + "|".join("---" for _ in head) + "|", *(_md_row(r) for r in rows)])


def report_markdown(report: Report) -> str:
    n, done = len(report.rows), len(report.predicted)
    parts = [
        "# Calibration: the performance model against published measurements",
        "",
        "Generated by `planner calibrate --markdown docs/calibration.md`; do not edit by hand.",
        f"Source: `{report.source}` ({n} rows; {done} predicted, {n - done} skipped with a reason).",
        "",
        "Ratio = predicted / measured. For throughput, < 1 means the model is pessimistic; for",
        "latency and GPU-hours, > 1 means it is pessimistic. Median |err| is the median of",
        "|ratio - 1|; the worst ratio is the one farthest from 1 (x2 and x0.5 count alike).",
        "",
        "## By family",
        "",
        _md_table(SUMMARY_HEADER, (summary_cells(s) for s in family_summaries(report))),
        "",
        "## By family, GPU generation and precision",
        "",
        _md_table(SUMMARY_HEADER, (summary_cells(s) for s in generation_summaries(report))),
        "",
        "## By family and scenario",
        "",
        _md_table(SUMMARY_HEADER, (summary_cells(s) for s in scenario_summaries(report))),
        "",
        "## Worst rows",
        "",
        _md_table(ROW_HEADER, (row_cells(r) for r in worst_rows(report))),
        "",
        "## Assumptions the harness makes",
        "",
        *[f"- `{k}` = {v}" for k, v in assumptions().items()],
        "",
        "## Every row",
        "",
        _md_table(
            (*ROW_HEADER, "how modelled / why skipped"),
            ([*row_cells(r), r.how or f"skipped: {r.skipped}"] for r in report.rows),
        ),
        "",
        "## Skipped, by reason",
        "",
        _md_table(("reason", "rows"), ([k, str(v)] for k, v in skip_counts(report).items())),
        "",
    ]
    return "\n".join(parts)


def print_report(report: Report, console: Console) -> None:
    """Terminal tables: families, generation x precision, worst rows, skip reasons."""
    from rich.table import Table

    def table(title: str, header: Iterable[str], rows: Iterable[list[str]]) -> None:
        t = Table(title=title, title_justify="left")
        for col in header:
            t.add_column(col, overflow="fold")
        for row in rows:
            t.add_row(*row)
        console.print(t)

    n, done = len(report.rows), len(report.predicted)
    console.print(f"{report.source}: {n} rows, {done} predicted, {n - done} skipped")
    table("by family", SUMMARY_HEADER, (summary_cells(s) for s in family_summaries(report)))
    table(
        "by family | generation | precision",
        SUMMARY_HEADER,
        (summary_cells(s) for s in generation_summaries(report)),
    )
    table("by family | scenario", SUMMARY_HEADER, (summary_cells(s) for s in scenario_summaries(report)))
    table("worst rows", ROW_HEADER, (row_cells(r) for r in worst_rows(report)))
    table("skipped, by reason", ("reason", "rows"), ([k, str(v)] for k, v in skip_counts(report).items()))
