"""Speculative decoding and prefix caching: what a replica's query says about them.

Speculation (a draft model, or the model's own multi-token-prediction heads): each step the
draft proposes ``k`` tokens, one at a time (``k`` draft decode passes), and the target
verifies them in one pass over ``k + 1`` tokens per sequence (its weights read once, its
compute and KV reads for ``k + 1`` tokens). Each proposed token is accepted with probability
``a``, independently, up to the first rejection, and the verify pass always yields one token
of its own, so a step yields ``E = 1 + a + ... + a^k = (1 - a^(k+1)) / (1 - a)`` tokens on
average: a request needs ``(output - 1) / E`` steps after its first token, and TPOT is the
step time over ``E``. The draft's weights and KV cache sit on the replica beside the target's.

Prefix caching: a prompt's first ``shared_tokens`` tokens are found in the replica's prefix
cache with probability ``hit_rate``; a hit prefills only the rest (which still attends to
the cached part). One copy of the shared prefix's KV is held per replica, and a hitting
sequence's own cache does not repeat those blocks (paged attention shares them); decoding
still attends to the whole context.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from planner.catalog import Catalog
from planner.perf.shapes import ModelShape, shape_of
from planner.schema.model_ref import ConfigModel, InlineModel
from planner.schema.serving import PrefixCacheSpec, SpeculativeSpec

DRAFT_TOKENS = 4  # tokens a draft model proposes per step unless the service says otherwise
MTP_DEPTH = 1  # MTP modules in the catalog's models (DeepSeek-V3/R1: num_nextn_predict_layers 1)


@dataclass(frozen=True)
class PrefixCache:
    shared_tokens: int
    hit_rate: float

    def cached_tokens(self, input_tokens: float) -> int:
        """Tokens a hit skips for prompts of ``input_tokens``: the shared prefix, when the prompt
        is longer than it (a mix's shorter buckets do not hit)."""
        return self.shared_tokens if self.shared_tokens < input_tokens and self.hit_rate > 0 else 0


@dataclass(frozen=True)
class Speculation:
    draft: ModelShape  # the draft model, or the MTP module as a one-layer model (see mtp_shape)
    tokens: int  # k: tokens proposed per step
    acceptance_rate: float  # a: each proposed token's chance of acceptance
    mtp: bool = False

    @property
    def tokens_per_step(self) -> float:
        """``E = (1 - a^(k+1)) / (1 - a)``: tokens one step yields on average."""
        return expected_tokens(self.acceptance_rate, self.tokens)

    @property
    def label(self) -> str:
        return "mtp" if self.mtp else self.draft.name


def expected_tokens(acceptance_rate: float, tokens: int) -> float:
    a = acceptance_rate
    if a >= 1:
        return tokens + 1.0
    return (1 - a ** (tokens + 1)) / (1 - a)


def mtp_shape(model: ModelShape, mtp_params_b: float) -> ModelShape:
    """The multi-token-prediction module as a one-layer model of the target's shape.

    An approximation: DeepSeek-V3's MTP module is one transformer layer (MLA attention and an
    MoE block of the target's expert layout) plus a projection, 11.6B parameters, sharing the
    target's embedding and output head. Here it is the target's shape cut to one layer with
    ``mtp_params_b`` parameters: on an MoE model one MoE layer's routed experts (the target's
    routed parameters over its MoE layers), the rest dense; active parameters are the dense
    part plus ``k / E`` of those experts (DeepSeek-V3: 0.34B + 11.27B x 8/256 = 0.69B). Its KV
    cache is one layer of the target's layout. Not counted: the reads of the output head it
    shares with the target (0.9B parameters on DeepSeek-V3), and its own weights stay in the
    checkpoint's format (as the target's).
    """
    moe_layers = model.moe_layer_count()
    routed = model.routed_expert_params_b() / moe_layers if moe_layers else 0.0
    routed = min(routed, mtp_params_b)
    active = mtp_params_b - routed + (routed * model.experts_per_token / model.experts if routed else 0.0)
    return replace(
        model,
        name=f"{model.name}-mtp",
        params_b=mtp_params_b,
        active_params_b=active,
        layers=1,
        expert_params_b=routed if routed else None,
        moe_layers=1 if routed else None,
        full_attention_layers=None if model.sliding_window is None else min(1, model.full_attention_layers or 0),
        derived=True,
    )


def mtp_params_b(model: str | InlineModel | ConfigModel | None, catalog: Catalog) -> float | None:
    """The model's multi-token-prediction module, billions (None: it has none, as far as known)."""
    if isinstance(model, str):
        found = catalog.find_model_id(model)
        return catalog.models[found].mtp_params_b if found is not None else None
    if isinstance(model, ConfigModel):
        return model.entry.mtp_params_b
    return None


def prefix_of(spec: PrefixCacheSpec | None) -> PrefixCache | None:
    return PrefixCache(spec.shared_tokens, spec.hit_rate) if spec is not None else None


def speculation_of(
    spec: SpeculativeSpec, model: str | InlineModel | ConfigModel, shape: ModelShape, catalog: Catalog
) -> Speculation:
    """A service's ``speculative`` key as the performance model's speculation (names checked on
    loading: ``planner.io.catalog_refs``)."""
    if spec.mtp:
        params = mtp_params_b(model, catalog)
        if params is None:
            raise ValueError(f"{shape.name} has no multi-token-prediction module")
        return Speculation(mtp_shape(shape, params), spec.tokens or MTP_DEPTH, spec.acceptance_rate, mtp=True)
    assert spec.draft_model is not None
    draft = shape_of(spec.draft_model, catalog)
    return Speculation(draft, spec.tokens or DRAFT_TOKENS, spec.acceptance_rate)
