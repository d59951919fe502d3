"""Serving options of an inference service: a shared prompt prefix found in the prefix cache,
and speculative decoding (a draft model or the model's multi-token-prediction heads).
The physics: ``planner.perf.speculation``."""

from __future__ import annotations

from pydantic import Field, model_validator

from planner.schema.base import Strict
from planner.schema.model_ref import InlineModel


class PrefixCacheSpec(Strict):
    shared_tokens: int = Field(
        ge=1,
        le=10_000_000,
        description="the prompt's first tokens shared between requests (system prompt, earlier turns); "
        "fewer than input_tokens",
    )
    hit_rate: float = Field(
        ge=0, le=1, description="share of requests whose shared prefix is found in the replica's prefix cache"
    )


class SpeculativeSpec(Strict):
    draft_model: str | InlineModel | None = Field(
        default=None, description="the draft model: a name from catalogs/models.yaml or {params_b: ...}"
    )
    mtp: bool = Field(
        default=False, description="draft with the model's own multi-token-prediction module (catalog mtp_params_b)"
    )
    acceptance_rate: float = Field(
        gt=0, lt=1, description="chance each speculated token is accepted (independently, up to the first rejection)"
    )
    tokens: int | None = Field(
        default=None,
        ge=1,
        le=32,
        description="tokens speculated per step; default 4 for a draft model, 1 (the MTP module's depth) for mtp",
    )

    @model_validator(mode="after")
    def _check(self) -> SpeculativeSpec:
        if (self.draft_model is None) == (not self.mtp):
            raise ValueError("speculative needs exactly one of draft_model or mtp: true")
        return self
