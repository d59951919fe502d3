"""Parameter counts from a Hugging Face config.json: the tensor shapes the model code builds
(embeddings, GQA or MLA attention, dense MLPs, routed and shared experts with their router,
norms, the output head unless tied), and the config's fields with errors that name them.
The conventions are stated in :mod:`planner.io.hf_config`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from planner.errors import InputError


@dataclass(frozen=True)
class HfConfig:
    """The config's fields, with errors that name the field and the file."""

    data: Mapping[str, Any]
    file: str | None
    family: str

    def _error(self, key: str, message: str) -> InputError:
        return InputError(message, file=self.file, key=key)

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def whole(self, key: str, default: int | None = None) -> int:
        value = self.data.get(key)
        if value is None:
            if default is not None:
                return default
            raise self._error(key, f"missing field {key!r}, needed to size a {self.family} model")
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self._error(key, f"{key} must be a whole number >= 0, not {value!r}")
        return value

    def flag(self, key: str, default: bool = False) -> bool:
        value = self.data.get(key)
        return default if value is None else bool(value)

    def ints(self, key: str) -> list[int]:
        value = self.data.get(key) or []
        if not isinstance(value, list) or not all(isinstance(v, int) for v in value):
            raise self._error(key, f"{key} must be a list of whole numbers")
        return value

    def strings(self, key: str) -> list[str]:
        value = self.data.get(key) or []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self._error(key, f"{key} must be a list of names")
        return value


# --- counting -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ParamCount:
    """Parameter counts derived from a config, in parameters (not billions)."""

    total: int  # main model, MTP module excluded
    active: int  # per token: routed experts not chosen and the input embedding excluded
    routed_experts: int  # all routed experts of all layers
    mtp: int  # multi-token-prediction module(s), beyond ``total``


@dataclass(frozen=True)
class Blocks:
    """The pieces one model is built from, per layer where it says so."""

    embed: int
    lm_head: int  # 0 when tied to the embeddings
    attention: int  # per layer, its norms included
    dense_mlp: int  # per dense layer
    expert: int  # per routed expert
    always_on: int  # per MoE layer: shared experts and the router
    layers: int
    moe_layers: int
    experts: int
    experts_per_token: int


def _gqa_attention(c: HfConfig, hidden: int) -> int:
    heads, kv = c.whole("num_attention_heads"), c.whole("num_key_value_heads", c.whole("num_attention_heads"))
    hd = c.whole("head_dim", hidden // heads)
    params = hidden * heads * hd + 2 * hidden * kv * hd + heads * hd * hidden
    if c.family in ("qwen2", "qwen2_moe") or c.flag("attention_bias"):
        params += heads * hd + 2 * kv * hd  # q, k, v biases (Qwen2 always has them)
    if c.family not in ("qwen2", "qwen2_moe") and c.flag("attention_bias"):
        params += hidden  # output projection bias
    if c.family in ("qwen3", "qwen3_moe"):
        params += 2 * hd  # RMSNorm on q and k per head (Llama 4's qk norm has no weights)
    if c.family == "gpt_oss":
        params += heads  # one attention-sink logit per head
    return params


def _mla_attention(c: HfConfig, hidden: int) -> int:
    """DeepSeek's multi-head latent attention: low-rank query and KV projections."""
    heads, kv_rank = c.whole("num_attention_heads"), c.whole("kv_lora_rank")
    nope, rope, v = c.whole("qk_nope_head_dim"), c.whole("qk_rope_head_dim"), c.whole("v_head_dim")
    q_rank = c.whole("q_lora_rank", 0)
    q_out = heads * (nope + rope)
    query = hidden * q_rank + q_rank + q_rank * q_out if q_rank else hidden * q_out
    kv = hidden * (kv_rank + rope) + kv_rank + kv_rank * heads * (nope + v)  # with the latent's norm
    return query + kv + heads * v * hidden


def _is_moe_layer(c: HfConfig, i: int) -> bool:
    if c.family in ("mixtral", "gpt_oss"):
        return True
    if c.family in ("qwen2_moe", "qwen3_moe"):
        step = c.whole("decoder_sparse_step", 1)
        return c.whole("num_experts") > 0 and i not in c.ints("mlp_only_layers") and (i + 1) % max(step, 1) == 0
    if c.family == "deepseek":
        first, freq = c.whole("first_k_dense_replace", 0), c.whole("moe_layer_freq", 1)
        return c.whole("n_routed_experts", 0) > 0 and i >= first and i % max(freq, 1) == 0
    if c.family == "llama4":
        if c.has("moe_layers"):
            return i in c.ints("moe_layers")
        step = c.whole("interleave_moe_layer_step", 1)
        return step > 0 and (i + 1) % step == 0
    return False


def _experts(c: HfConfig, hidden: int) -> tuple[int, int, int, int]:
    """(routed experts, experts per token, params per expert, params always on per MoE layer)."""
    fam = c.family
    if fam == "mixtral":
        e, k, inter = c.whole("num_local_experts"), c.whole("num_experts_per_tok"), c.whole("intermediate_size")
        return e, k, 3 * hidden * inter, hidden * e
    if fam == "gpt_oss":
        k = c.whole("num_experts_per_tok", c.data.get("experts_per_token"))  # OpenAI's own name for it
        e, inter = c.whole("num_local_experts"), c.whole("intermediate_size")
        return e, k, 3 * hidden * inter + 2 * inter + hidden, hidden * e + e  # biased experts and router
    if fam in ("qwen2_moe", "qwen3_moe"):
        e, k, inter = c.whole("num_experts"), c.whole("num_experts_per_tok"), c.whole("moe_intermediate_size")
        shared = c.whole("shared_expert_intermediate_size", 0)
        gate = hidden if shared else 0  # Qwen2-MoE's sigmoid gate on its shared expert
        return e, k, 3 * hidden * inter, hidden * e + 3 * hidden * shared + gate
    if fam == "deepseek":
        e, k, inter = c.whole("n_routed_experts"), c.whole("num_experts_per_tok"), c.whole("moe_intermediate_size")
        shared = c.whole("n_shared_experts", 0) * 3 * hidden * inter
        bias = e if c.data.get("topk_method") == "noaux_tc" else 0  # V3's routing-bias correction
        return e, k, 3 * hidden * inter, hidden * e + bias + shared
    if fam == "llama4":
        e, k, inter = c.whole("num_local_experts"), c.whole("num_experts_per_tok"), c.whole("intermediate_size")
        return e, k, 3 * hidden * inter, hidden * e + 3 * hidden * inter  # one shared expert
    return 1, 1, 0, 0


def _dense_mlp(c: HfConfig, hidden: int) -> int:
    key = "intermediate_size_mlp" if c.family == "llama4" else "intermediate_size"
    inter = c.whole(key)
    bias = 2 * inter + hidden if c.flag("mlp_bias") else 0
    return 3 * hidden * inter + bias  # SwiGLU: gate, up and down projections


def blocks_of(c: HfConfig) -> Blocks:
    hidden, layers, vocab = c.whole("hidden_size"), c.whole("num_hidden_layers"), c.whole("vocab_size")
    attention = _mla_attention(c, hidden) if c.family == "deepseek" else _gqa_attention(c, hidden)
    experts, k, expert, always_on = _experts(c, hidden)
    moe_layers = sum(_is_moe_layer(c, i) for i in range(layers)) if experts > 1 else 0
    dense_layers = layers - moe_layers
    return Blocks(
        embed=vocab * hidden,
        lm_head=0 if c.flag("tie_word_embeddings") else vocab * hidden,
        attention=attention + 2 * hidden,  # pre-attention and pre-MLP norms
        dense_mlp=_dense_mlp(c, hidden) if dense_layers else 0,
        expert=expert,
        always_on=always_on,
        layers=layers,
        moe_layers=moe_layers,
        experts=experts,
        experts_per_token=k,
    )


def _mtp_params(c: HfConfig, b: Blocks) -> int:
    """DeepSeek-V3's MTP module: two norms, a 2h -> h projection, one more MoE layer and
    a norm before the output head (the embeddings and head are the main model's)."""
    hidden = c.whole("hidden_size")
    per_module = 3 * hidden + 2 * hidden * hidden + b.attention + b.experts * b.expert + b.always_on
    return c.whole("num_nextn_predict_layers", 0) * per_module if c.family == "deepseek" else 0


def count_params(c: HfConfig) -> ParamCount:
    b = blocks_of(c)
    routed = b.moe_layers * b.experts * b.expert
    total = (
        b.embed
        + b.lm_head
        + c.whole("hidden_size")  # final norm
        + b.layers * b.attention
        + (b.layers - b.moe_layers) * b.dense_mlp
        + routed
        + b.moe_layers * b.always_on
    )
    skipped = b.moe_layers * (b.experts - b.experts_per_token) * b.expert
    # a tied embedding is the output head too, so it stays active
    lookup_only = b.embed if b.lm_head else 0
    return ParamCount(total=total, active=total - skipped - lookup_only, routed_experts=routed, mtp=_mtp_params(c, b))


# --- the catalog entry ----------------------------------------------------------------------
