"""Model shapes: the numbers the physics needs, from the catalog or derived from a size."""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner.catalog import Catalog
from planner.schema.problem import InlineModel

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

    def kv_bytes_per_token(self, bytes_per_value: float) -> float:
        """K and V for every layer: 2 * layers * kv_heads * head_dim * bytes."""
        return 2 * self.layers * self.kv_heads * self.head_dim * bytes_per_value


def shape_of(model: str | InlineModel, catalog: Catalog) -> ModelShape:
    if isinstance(model, str):
        m = catalog.model(model)
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
        )
    return inline_shape(model)


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
