"""From a published row to the planner's terms: catalog GPU, model shape, precision, lengths, deployment.

A row the model cannot express raises ``Skip`` with the reason shown in the report.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from planner.catalog import Catalog
from planner.perf.calibration.assumptions import OPENORCA_INPUT_TOKENS, OPENORCA_OUTPUT_TOKENS
from planner.perf.calibration.measurements import Measurement
from planner.perf.links import link_for
from planner.perf.shapes import ModelShape, shape_of
from planner.schema.catalog import Gpu, ServerChassis
from planner.schema.model_ref import InlineModel

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


class Skip(Exception):
    """A row the model cannot express; the message is the reason shown in the report."""


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


def int_or_none(text: str) -> int | None:
    return int(text) if re.fullmatch(r"\d+", text.strip()) else None


def first_int(pattern: str, text: str) -> int | None:
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
    batch = first_int(r"gpu_batch_size\s+(\d+)", text) or first_int(r"\bbatch\s+(\d+)", text)
    return Deployment(
        tp=first_int(r"\bTP\s*(\d+)", text),
        replicas=first_int(r"(\d+)\s+instances", text),
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
    n_in, n_out = int_or_none(m.input_tokens), int_or_none(m.output_tokens)
    if n_in is None or n_out is None:
        raise Skip(f"lengths not stated: input {m.input_tokens!r}, output {m.output_tokens!r}")
    return n_in, n_out, ""


def chassis_for(catalog: Catalog, gpu: Gpu, tp: int) -> ServerChassis:
    """The chassis with the fastest GPU link holding the GPU (as ``planner estimate`` picks)."""
    fits = [s for s in catalog.servers.values() if gpu.id in s.gpus and s.gpus_per_server >= tp]
    if not fits:
        raise Skip(f"no catalog server holds {tp} x {gpu.id} in one replica")
    return max(fits, key=lambda s: (link_for(s, gpu, tp).gb_per_s_one_way, s.gpus_per_server, s.id))
