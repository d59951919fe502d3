"""Precisions: bytes per weight, and which tensor-core precision a GPU computes them in."""

from __future__ import annotations

from planner.schema.catalog import Gpu, Precision, is_precision

BYTES: dict[str, float] = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5,
    "fp4": 0.5,
}

# Bytes per weight of the formats checkpoints are published in. MXFP4 (OCP Microscaling):
# 4-bit E2M1 values plus one 8-bit scale per block of 32, 4.25 bits. DeepSeek's block FP8
# adds one FP32 scale per 128 x 128 block (4 / 16,384 bytes a weight): left out.
FORMAT_BYTES: dict[str, float] = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "mxfp4": 4.25 / 8}


def compute_precision(gpu: Gpu, weights: str) -> Precision | None:
    """The tensor-core precision used for ``weights`` on ``gpu``, or None if unsupported.

    Weight-only int4 dequantises to 16-bit and runs on any GPU; every other
    precision needs tensor-core support on the GPU itself.
    """
    flops = gpu.tflops_dense
    if weights == "int4":
        return "bf16" if "bf16" in flops else "fp16"
    return weights if is_precision(weights) and weights in flops else None


def kv_bytes(weights: str, compute: str) -> float:
    """KV-cache bytes per value: 8-bit where the engine computes in 8 bits or fewer."""
    if compute in {"fp8", "fp4", "int8"}:
        return 1.0
    return 4.0 if compute == "fp32" else 2.0


def weight_bytes(weights: str, int4_overhead: float) -> float:
    """Bytes per parameter; int4 pays for its group scales and zero points."""
    return BYTES[weights] * (int4_overhead if weights == "int4" else 1.0)


def stored_weight_bytes(weights: str, native_format: str | None, int4_overhead: float) -> float:
    """Bytes per parameter as served: the precision asked for, never more than the checkpoint's own.

    Engines dequantise a checkpoint published in fewer bits on the fly (gpt-oss's MXFP4
    experts, DeepSeek's FP8) rather than upcast it in memory, so asking for bf16 does not
    double an FP8 checkpoint; asking for fewer bits than published quantises it further.
    """
    asked = weight_bytes(weights, int4_overhead)
    return asked if native_format is None else min(asked, FORMAT_BYTES[native_format])
