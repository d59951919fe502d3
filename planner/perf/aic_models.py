"""What aiconfigurator is told about a planner model and precision: which of its bundled
configs stands for a catalog model (or the config.json written for it), and its quantisation
modes for the planner's precision names. Pure data and functions: no aiconfigurator import
(``planner.perf.aic_backend`` runs it)."""

from __future__ import annotations

from typing import Any

from planner.perf.inference_types import InferenceQuery
from planner.perf.precision import compute_precision, kv_bytes
from planner.schema.catalog import LlmModel

# Catalog model id -> a config aiconfigurator bundles and lists (passed by Hugging Face id).
BUNDLED: dict[str, str] = {
    "llama-3.1-8b": "meta-llama/Meta-Llama-3.1-8B",
    "llama-3.1-70b": "meta-llama/Meta-Llama-3.1-70B",
    "llama-3.1-405b": "meta-llama/Meta-Llama-3.1-405B",
    "deepseek-v3": "deepseek-ai/DeepSeek-V3",
    "deepseek-r1": "deepseek-ai/DeepSeek-R1",
    "qwen3-8b": "Qwen/Qwen3-8B",
    "qwen3-32b": "Qwen/Qwen3-32B",
    "qwen3-30b-a3b": "Qwen/Qwen3-30B-A3B",
    "qwen3-235b-a22b": "Qwen/Qwen3-235B-A22B",
    "gpt-oss-20b": "openai/gpt-oss-20b",
    "gpt-oss-120b": "openai/gpt-oss-120b",
    "llama-4-scout": "meta-llama/Llama-4-Scout-17B-16E-Instruct",
    "llama-4-maverick": "meta-llama/Llama-4-Maverick-17B-128E-Instruct",
}

# Catalog model id -> a config file aiconfigurator ships but does not list as a model id
# (asking by id would download it); copied into a local folder as ``config.json``.
COPIED: dict[str, str] = {
    "kimi-k2": "moonshotai--Kimi-K2-Instruct_config.json",
    "mixtral-8x7b": "mistralai--Mixtral-8x7B-v0.1_config.json",
}

# Dense GQA catalog models aiconfigurator runs as its LLAMA family: a config.json is written
# from the catalog entry (intermediate size from the parameter count, ``dense_config``).
GENERATED: dict[str, str] = {
    "llama-2-7b": "LlamaForCausalLM",
    "llama-2-13b": "LlamaForCausalLM",
    "llama-2-70b": "LlamaForCausalLM",
    "mistral-7b": "LlamaForCausalLM",
    "qwen2.5-7b": "Qwen2ForCausalLM",
    "qwen2.5-72b": "Qwen2ForCausalLM",
    "qwen3-14b": "Qwen3ForCausalLM",
}


def dense_config(m: LlmModel, architecture: str) -> dict[str, Any]:
    """A Hugging Face style config.json for a dense GQA catalog model.

    The catalog has no intermediate (MLP) size; it follows from the parameter count with
    untied embeddings and a gated MLP: ``params = 2 * vocab * hidden + layers * (attention
    + 3 * hidden * intermediate)``, rounded to a multiple of 128 (Llama 2 7B: 11008).
    """
    attention = m.hidden_size * m.head_dim * (2 * m.attention_heads + 2 * m.kv_heads)
    per_layer = (m.params_b * 1e9 - 2 * m.vocab_size * m.hidden_size) / m.layers
    intermediate = 128 * round((per_layer - attention) / (3 * m.hidden_size) / 128)
    return {
        "architectures": [architecture],
        "model_type": {"LlamaForCausalLM": "llama", "Qwen2ForCausalLM": "qwen2"}.get(architecture, "qwen3"),
        "hidden_size": m.hidden_size,
        "intermediate_size": intermediate,
        "num_hidden_layers": m.layers,
        "num_attention_heads": m.attention_heads,
        "num_key_value_heads": m.kv_heads,
        "head_dim": m.head_dim,
        "vocab_size": m.vocab_size,
        "max_position_embeddings": m.max_context,
        "tie_word_embeddings": False,
        "hidden_act": "silu",
        "torch_dtype": "bfloat16",
    }


# --- precision: the planner's names to aiconfigurator's quantisation modes ------------


def quant_modes(query: InferenceQuery) -> dict[str, str] | None:
    """GEMM, MoE and KV-cache modes for the query's precision on its GPU; None if unsupported.

    The KV cache follows the planner's rule (8-bit where compute is 8 bits or fewer).
    Weights published in MXFP4 (gpt-oss's experts) stay MXFP4, run weight-only below FP4.
    """
    compute = compute_precision(query.gpu, query.precision)
    if compute is None:
        return None
    kv = "fp8" if kv_bytes(query.precision, compute) == 1.0 else "bfloat16"
    gemm = {"fp8": "fp8", "fp4": "nvfp4", "bf16": "bfloat16", "fp16": "bfloat16", "int4": "int4_wo"}.get(
        query.precision
    )
    if gemm is None:
        return None
    moe = gemm
    experts = query.model.experts_format or query.model.weights_format
    if experts == "mxfp4":  # gpt-oss: MXFP4 experts, FP8 activations on Blackwell, weight-only below
        moe = "w4a8_mxfp4_mxfp8" if query.precision == "fp4" else "w4a16_mxfp4"
    elif (
        query.model.weights_format == "fp8"
        and query.precision in {"fp8", "bf16", "fp16"}
        and compute_precision(query.gpu, "fp8") is not None
    ):  # DeepSeek's block-scaled FP8 checkpoint stays FP8 (on GPUs with FP8 tensor cores)
        gemm = moe = "fp8_block"
    return {"gemm_quant_mode": gemm, "moe_quant_mode": moe, "kvcache_quant_mode": kv}
