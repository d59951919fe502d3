"""Any model from its Hugging Face ``config.json``: its shape, its parameter counts, a catalog entry.

The counts come from the tensor shapes the config implies, the way the model code builds
them: embeddings, attention (GQA, or MLA's low-rank projections), dense MLPs, routed and
shared experts with their router, norms, and the output head unless it is tied to the
embeddings. Conventions, chosen to match how the model makers publish their figures:

- ``params_b`` is every weight of the main model; a multi-token-prediction module
  (DeepSeek-V3's ``num_nextn_predict_layers``) is counted apart, in ``mtp_params_b``;
- ``active_params_b`` is what one token's matrix multiplications use: the routed experts
  it is not sent to and the input embedding (a table lookup) are left out, the output head
  is kept (OpenAI's 5.1B for gpt-oss-120b and DeepSeek's 36.6B for V3 count this way);
- a vision encoder (Llama 4) is not counted: the planner serves text.

Entry points for the command line: :func:`model_from_config` and :func:`model_entry_yaml`.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml

from planner.errors import InputError
from planner.io.hf_params import Blocks, HfConfig, ParamCount, blocks_of, count_params
from planner.schema.catalog import LlmModel, Source

_MAX_CONFIG_BYTES = 4 * 1024 * 1024  # a config.json is a few kB; refuse to parse a weights file by mistake

# Hugging Face class name -> the family whose shapes it shares.
_ARCHITECTURES = {
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "llama",
    "Qwen2ForCausalLM": "qwen2",
    "Qwen3ForCausalLM": "qwen3",
    "MixtralForCausalLM": "mixtral",
    "Qwen2MoeForCausalLM": "qwen2_moe",
    "Qwen3MoeForCausalLM": "qwen3_moe",
    "DeepseekV2ForCausalLM": "deepseek",
    "DeepseekV3ForCausalLM": "deepseek",
    "GptOssForCausalLM": "gpt_oss",
    "Llama4ForConditionalGeneration": "llama4",
    "Llama4ForCausalLM": "llama4",
}
_MODEL_TYPES = {
    "llama": "llama",
    "mistral": "llama",
    "qwen2": "qwen2",
    "qwen3": "qwen3",
    "mixtral": "mixtral",
    "qwen2_moe": "qwen2_moe",
    "qwen3_moe": "qwen3_moe",
    "deepseek_v2": "deepseek",
    "deepseek_v3": "deepseek",
    "kimi_k2": "deepseek",
    "gpt_oss": "gpt_oss",
    "llama4": "llama4",
    "llama4_text": "llama4",
}
Format = Literal["bf16", "fp16", "fp8", "mxfp4"]  # as LlmModel.weights_format
_DTYPES: dict[str, Format] = {"bfloat16": "bf16", "float16": "fp16"}


# --- reading ------------------------------------------------------------------------------


def load_config(path_or_dict: str | Path | Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    """The parsed config and the file it came from (None for a mapping given directly)."""
    if isinstance(path_or_dict, Mapping):
        return dict(path_or_dict), None
    path = Path(path_or_dict)
    if path.is_dir():  # a downloaded model folder
        path = path / "config.json"
    try:
        if path.stat().st_size > _MAX_CONFIG_BYTES:
            raise InputError(f"{path.stat().st_size} bytes is too large for a config.json", file=str(path))
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("file not found", file=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read it: {exc}", file=str(path)) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg}", file=str(path), line=exc.lineno) from None
    if not isinstance(data, dict):
        raise InputError("a config.json holds one JSON object", file=str(path))
    return data, str(path)


def _family(data: Mapping[str, Any], file: str | None) -> tuple[str, Mapping[str, Any]]:
    """The family and the mapping holding the text model's fields (Llama 4 nests them)."""
    names = data.get("architectures") or []
    names = names if isinstance(names, list) else [names]
    found = [_ARCHITECTURES[n] for n in names if isinstance(n, str) and n in _ARCHITECTURES]
    model_type = data.get("model_type")
    if not found and isinstance(model_type, str) and model_type in _MODEL_TYPES:
        found = [_MODEL_TYPES[model_type]]
    if not found:
        named = [str(n) for n in names] or ([str(data["model_type"])] if data.get("model_type") else [])
        what = f"unknown architecture {', '.join(named)}" if named else "no 'architectures' or 'model_type' given"
        raise InputError(
            f"{what}: supported are {', '.join(sorted(_ARCHITECTURES))}",
            file=file,
            key="architectures",
        )
    text = data.get("text_config")
    return found[0], text if isinstance(text, Mapping) else data


def _windows(c: HfConfig) -> tuple[int | None, int | None]:
    """(sliding_window, full_attention_layers), or (None, None) when every layer sees everything."""
    layers = c.whole("num_hidden_layers")
    kinds = c.strings("layer_types")
    if c.family == "llama4" and c.has("attention_chunk_size"):
        # iRoPE: RoPE layers attend within 8K-token chunks; every 4th (NoPE) layer sees everything
        flags = c.ints("no_rope_layers")
        interval = c.whole("no_rope_layer_interval", 4)
        local = sum(flags) if flags else sum((i + 1) % interval != 0 for i in range(layers))
        return c.whole("attention_chunk_size"), layers - local
    if kinds:
        local = sum(k in ("sliding_attention", "chunked_attention") for k in kinds)
        return (c.whole("sliding_window"), layers - local) if local else (None, None)
    if c.family in ("qwen2", "qwen3", "qwen2_moe", "qwen3_moe"):
        if c.flag("use_sliding_window") and c.has("sliding_window"):
            full = min(layers, c.whole("max_window_layers", layers))  # later layers slide
            return (c.whole("sliding_window"), full) if full < layers else (None, None)
        return None, None
    if c.family in ("llama", "mixtral") and c.has("sliding_window"):
        return c.whole("sliding_window"), 0  # Mistral 7B v0.1: every layer slides
    return None, None


def _formats(c: HfConfig, top: Mapping[str, Any]) -> tuple[Format | None, Format | None, str]:
    """(weights_format, experts_format, a note) from the dtype and quantization_config."""
    dtype = c.data.get("torch_dtype") or c.data.get("dtype") or top.get("torch_dtype") or top.get("dtype")
    weights = _DTYPES.get(str(dtype))
    quant = top.get("quantization_config") or {}
    method = quant.get("quant_method") if isinstance(quant, Mapping) else None
    if method == "fp8":
        return "fp8", None, ""
    if method == "mxfp4":
        # gpt-oss: MoE weights MXFP4; attention, router and embeddings stay 16-bit (bf16)
        return weights or "bf16", "mxfp4", ""
    if method:
        return weights, None, f" quantization_config quant_method {method!r} is not modelled: weights sized at {dtype}."
    return weights, None, ""


def _default_id(file: str | None, data: Mapping[str, Any]) -> str:
    if file is not None:
        path = Path(file)
        stem = path.parent.name if path.name == "config.json" and path.parent.name else path.stem
        return stem.lower()
    name = str(data.get("_name_or_path") or data.get("model_type") or "model")
    return name.rsplit("/", 1)[-1].lower()


def _attention_fields(c: HfConfig) -> dict[str, Any]:
    heads = c.whole("num_attention_heads")
    hidden = c.whole("hidden_size")
    if c.family == "deepseek":
        nope, rope = c.whole("qk_nope_head_dim"), c.whole("qk_rope_head_dim")
        return {
            "attention": "mla",
            "attention_heads": heads,
            "kv_heads": heads,  # MLA has no KV heads to group: each head expands the shared latent
            "head_dim": nope + rope,
            "kv_lora_rank": c.whole("kv_lora_rank"),
            "qk_rope_head_dim": rope,
            "qk_nope_head_dim": nope,
            "v_head_dim": c.whole("v_head_dim"),
            "q_lora_rank": c.whole("q_lora_rank", 0) or None,
        }
    return {
        "attention_heads": heads,
        "kv_heads": c.whole("num_key_value_heads", heads),
        "head_dim": c.whole("head_dim", hidden // heads),
    }


def _moe_fields(c: HfConfig, b: Blocks, counts: ParamCount, experts_format: Format | None) -> dict[str, Any]:
    if b.experts <= 1 or b.moe_layers == 0:
        return {}
    shared = {"deepseek": c.whole("n_shared_experts", 0), "llama4": 1}.get(c.family, 0)
    if c.family == "qwen2_moe" and c.whole("shared_expert_intermediate_size", 0):
        shared = 1
    return {
        "experts": b.experts,
        "experts_per_token": b.experts_per_token,
        "shared_experts": shared,
        "moe_layers": b.moe_layers,
        "expert_params_b": round(counts.routed_experts / 1e9, 3),
        "experts_format": experts_format,
    }


def _notes(arch: str, counts: ParamCount, b: Blocks, extra: str) -> str:
    text = (
        f"Imported from config.json ({arch}): {counts.total / 1e9:.2f}B parameters derived from the shapes, "
        f"{counts.active / 1e9:.2f}B active per token (input embedding excluded)."
    )
    if b.moe_layers:
        text += (
            f" MoE on {b.moe_layers} of {b.layers} layers: {b.experts} routed experts, {b.experts_per_token} per token."
        )
    if counts.mtp:
        text += f" Multi-token-prediction module: {counts.mtp / 1e9:.2f}B more, not in params_b."
    return text + extra


def model_from_config(
    path_or_dict: str | Path | Mapping[str, Any], model_id: str | None = None
) -> tuple[LlmModel, float]:
    """A catalog model from a Hugging Face config.json, and the total parameter count it derives (billions).

    Raises InputError naming the field when the architecture is unknown or a field it
    needs is missing.
    """
    data, file = load_config(path_or_dict)
    family, text = _family(data, file)
    c = HfConfig(text, file, family)
    counts, b = count_params(c), blocks_of(c)
    weights_format, experts_format, format_note = _formats(c, data)
    window, full_layers = _windows(c)
    arch = ", ".join(map(str, data.get("architectures") or [data.get("model_type")]))
    ident = model_id or _default_id(file, data)
    model = LlmModel(
        id=ident,
        name=ident,
        params_b=round(counts.total / 1e9, 3),
        active_params_b=round(counts.active / 1e9, 3),
        layers=c.whole("num_hidden_layers"),
        hidden_size=c.whole("hidden_size"),
        vocab_size=c.whole("vocab_size"),
        max_context=c.whole("max_position_embeddings"),
        sliding_window=window,
        full_attention_layers=full_layers,
        weights_format=weights_format,
        mtp_params_b=round(counts.mtp / 1e9, 3) or None,
        source=Source(title=f"{Path(file).name if file else 'config.json'} ({arch})", url="", date=dt.date.today()),
        notes=_notes(arch, counts, b, format_note),
        **_attention_fields(c),
        **_moe_fields(c, b, counts, experts_format if experts_format != weights_format else None),
    )
    return model, counts.total / 1e9


def model_entry_yaml(model: LlmModel, indent: int = 2) -> str:
    """One ``models:`` list item in the models.yaml format, fields at their defaults left out.

    ``indent`` is the list item's indentation (2 in the bundled catalogs/models.yaml).
    """
    entry = model.model_dump(mode="python", exclude_defaults=True)
    entry = {"id": entry.pop("id"), "name": entry.pop("name"), **entry}  # the catalog's order: id first
    text = yaml.safe_dump([entry], sort_keys=False, allow_unicode=True, width=100, default_flow_style=False)
    pad = " " * indent
    return "".join(pad + line if line.strip() else line for line in text.splitlines(keepends=True))
