"""Model shapes: the numbers the physics needs, from the catalog or derived from a size.

Beyond a dense model's size, a shape says what each token caches (GQA heads or an MLA
latent; sliding-window layers keep at most their window), how attention scales with the
context, and for mixture-of-experts models how many parameters sit in routed experts
(held in memory, but read only where a batch's tokens are routed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner.catalog import Catalog
from planner.schema.catalog import LlmModel
from planner.schema.model_ref import ConfigModel, InlineModel

# Dense transformer: params ~ 12 * layers * hidden^2, and hidden/layers ~ 128 across the
# Llama family (4096/32, 5120/40, 8192/80 ~ 102). Inline models get that shape unless given.
_HIDDEN_PER_LAYER = 128
_HEAD_DIM = 128
_DEFAULT_KV_HEADS = 8


@dataclass(frozen=True)
class ModelShape:
    name: str
    params_b: float
    active_params_b: float
    layers: int
    hidden_size: int
    kv_heads: int
    head_dim: int
    experts: int = 1
    experts_per_token: int = 1
    derived: bool = False  # True when the shape was guessed from the parameter count
    attention_heads: int = 0  # 0: unknown, attention width taken as hidden_size
    attention: str = "gqa"  # gqa | mla
    kv_lora_rank: int = 0  # MLA only, as the three below
    qk_rope_head_dim: int = 0
    qk_nope_head_dim: int = 0
    v_head_dim: int = 0
    sliding_window: int | None = None
    full_attention_layers: int | None = None  # None: every layer (no window) or none (window)
    expert_params_b: float | None = None  # routed experts, all layers; None: inferred
    moe_layers: int | None = None  # layers with routed experts; None: all (MoE) or none
    weights_format: str | None = None  # the checkpoint's own format, e.g. fp8
    experts_format: str | None = None  # the routed experts' format where it differs, e.g. mxfp4

    # --- KV cache ---------------------------------------------------------------------

    def kv_bytes_per_token(self, bytes_per_value: float) -> float:
        """Bytes one token adds to the cache when every layer keeps it.

        GQA/MHA: K and V per KV head, ``2 * layers * kv_heads * head_dim``. MLA caches one
        compressed latent and one RoPE key per token and layer, shared by all heads:
        ``layers * (kv_lora_rank + qk_rope_head_dim)`` (DeepSeek-V3: 576 values, not 32,768).
        """
        if self.attention == "mla":
            return self.layers * (self.kv_lora_rank + self.qk_rope_head_dim) * bytes_per_value
        return 2 * self.layers * self.kv_heads * self.head_dim * bytes_per_value

    def kv_bytes(self, context: float, bytes_per_value: float) -> float:
        """KV-cache bytes of one sequence holding ``context`` tokens.

        A sliding-window layer evicts what falls out of its window, so it holds at most
        ``sliding_window`` tokens whatever the context.
        """
        if self.sliding_window is None:
            return context * self.kv_bytes_per_token(bytes_per_value)
        per_layer_token = self.kv_bytes_per_token(bytes_per_value) / self.layers
        return per_layer_token * self.attended(context)

    def kv_replicas(self, tp: int) -> int:
        """Copies of each sequence's cache across ``tp`` tensor-parallel GPUs.

        Tensor parallelism splits attention by KV head; with fewer KV heads than GPUs each
        head is held by several GPUs. MLA's latent belongs to no head, so every GPU holds
        all of it (why engines run MLA attention data-parallel).
        """
        groups = 1 if self.attention == "mla" else self.kv_heads
        return max(1, math.ceil(tp / min(tp, groups)))

    # --- attention FLOPs ------------------------------------------------------------------

    def _full_layers(self) -> int:
        if self.sliding_window is None:
            return self.layers
        return self.full_attention_layers or 0

    def attended(self, context: float) -> float:
        """Cached tokens one new token attends to, summed over layers (windows capped)."""
        full = self._full_layers()
        if full == self.layers or self.sliding_window is None:
            return self.layers * context
        return full * context + (self.layers - full) * min(context, self.sliding_window)

    def causal_pairs(self, tokens: float) -> float:
        """(query, key) pairs of a causal pass over ``tokens`` new tokens, summed over layers."""
        full_pairs = tokens * tokens / 2
        full = self._full_layers()
        if full == self.layers or self.sliding_window is None:
            return self.layers * full_pairs
        w = self.sliding_window
        window_pairs = full_pairs if tokens <= w else w * w / 2 + (tokens - w) * w
        return full * full_pairs + (self.layers - full) * window_pairs

    def attention_flops_per_pair(self, *, decode: bool) -> float:
        """FLOPs of one (query, key) pair in one layer: scores plus the weighted values.

        GQA/MHA: ``2 * 2 * heads * head_dim`` (``4 * hidden`` in the usual shapes). MLA
        decodes "absorbed": every head scores the 576-wide latent+RoPE key and sums 512-wide
        latent values, ``2 * heads * (2 * kv_lora_rank + qk_rope_head_dim)``; prefill and
        training expand K and V per head, ``2 * heads * (qk_nope + qk_rope + v_head_dim)``.
        """
        if self.attention == "mla":
            heads = self.attention_heads
            if decode:
                return 2 * heads * (2 * self.kv_lora_rank + self.qk_rope_head_dim)
            return 2 * heads * (self.qk_nope_head_dim + self.qk_rope_head_dim + self.v_head_dim)
        width = self.attention_heads * self.head_dim if self.attention_heads else self.hidden_size
        return 4 * width

    # --- experts --------------------------------------------------------------------------

    def routed_expert_params_b(self) -> float:
        """Parameters in routed experts over all layers, billions (0 for a dense model).

        Without the catalog figure: a token skips ``E - k`` of ``E`` experts, and everything
        else (attention, shared experts, dense layers) is in both totals, so
        ``experts = (params - active) * E / (E - k)``.
        """
        e, k = self.experts, self.experts_per_token
        if e <= 1 or k >= e:
            return 0.0
        if self.expert_params_b is not None:
            return self.expert_params_b
        return (self.params_b - self.active_params_b) * e / (e - k)

    def routed_active_params_b(self) -> float:
        """Routed-expert parameters one token uses, billions: ``k / E`` of them."""
        routed = self.routed_expert_params_b()
        return routed * self.experts_per_token / self.experts if routed else 0.0

    def moe_layer_count(self) -> int:
        """Layers with routed experts (all of them unless the catalog says otherwise)."""
        if self.experts <= 1:
            return 0
        return self.layers if self.moe_layers is None else self.moe_layers

    def experts_touched(self, tokens: int) -> float:
        """Expected share of a layer's routed experts that ``tokens`` tokens use between them.

        Each token picks ``k`` of ``E``; taken as independent uniform picks, an expert is
        missed by all of them with probability ``(1 - k/E)^tokens``.
        """
        e, k = self.experts, self.experts_per_token
        if e <= 1:
            return 1.0
        return 1 - (1 - k / e) ** tokens


def shape_of(model: str | InlineModel | ConfigModel, catalog: Catalog) -> ModelShape:
    if isinstance(model, str):
        return shape_of_model(catalog.model(model))
    if isinstance(model, ConfigModel):
        return shape_of_model(model.entry)
    return inline_shape(model)


def shape_of_model(m: LlmModel) -> ModelShape:
    """The shape of a catalog entry, or of a model read from its config.json (planner.io.hf_config)."""
    return ModelShape(
        name=m.id,
        params_b=m.params_b,
        active_params_b=m.active_params_b,
        layers=m.layers,
        hidden_size=m.hidden_size,
        kv_heads=m.kv_heads,
        head_dim=m.head_dim,
        experts=m.experts,
        experts_per_token=m.experts_per_token,
        attention_heads=m.attention_heads,
        attention=m.attention,
        kv_lora_rank=m.kv_lora_rank or 0,
        qk_rope_head_dim=m.qk_rope_head_dim or 0,
        qk_nope_head_dim=m.qk_nope_head_dim or 0,
        v_head_dim=m.v_head_dim or 0,
        sliding_window=m.sliding_window,
        full_attention_layers=m.full_attention_layers,
        expert_params_b=m.expert_params_b,
        moe_layers=m.moe_layers,
        weights_format=m.weights_format,
        experts_format=m.experts_format,
    )


def inline_shape(model: InlineModel) -> ModelShape:
    params = model.params_b * 1e9
    layers = model.layers or max(1, round((params / (12 * _HIDDEN_PER_LAYER**2)) ** (1 / 3)))
    hidden = model.hidden_size or max(_HEAD_DIM, _HEAD_DIM * round(math.sqrt(params / (12 * layers)) / _HEAD_DIM))
    head_dim = model.head_dim or _HEAD_DIM
    kv_heads = model.kv_heads or min(_DEFAULT_KV_HEADS, max(1, hidden // head_dim))
    return ModelShape(
        name=f"dense-{model.params_b:g}b",
        params_b=model.params_b,
        active_params_b=model.active_params_b or model.params_b,
        layers=layers,
        hidden_size=hidden,
        kv_heads=kv_heads,
        head_dim=head_dim,
        derived=not (model.layers and model.hidden_size and model.kv_heads and model.head_dim),
    )
