"""How a problem names a model: a catalog id, a size ({params_b: ...}), or its config.json."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Discriminator, Field, PrivateAttr, Tag, model_validator

from planner.schema.base import Strict


class ConfigModel(Strict):
    """A model given by its Hugging Face config.json (read when the problem is loaded)."""

    config: str = Field(min_length=1, description="path of a config.json, relative to the problem file")
    _entry: Any = PrivateAttr(default=None)  # the catalog entry derived from it (planner.io.hf_config)

    @property
    def entry(self) -> Any:
        if self._entry is None:
            raise ValueError(f"model config {self.config!r} has not been read")
        return self._entry


def _model_form(value: Any) -> str:
    """Which form a `model:` takes, so errors speak of that form alone (not of every form tried)."""
    if isinstance(value, dict | ConfigModel) and (isinstance(value, ConfigModel) or "config" in value):
        return "ConfigModel"
    return "InlineModel" if isinstance(value, dict | InlineModel) else "str"


class InlineModel(Strict):
    """A dense model given by size; the shape is derived unless given (see perf.shapes)."""

    params_b: float = Field(gt=0, le=100_000)
    active_params_b: float | None = Field(default=None, gt=0, le=100_000)
    layers: int | None = Field(default=None, ge=1, le=1000)
    hidden_size: int | None = Field(default=None, ge=1, le=1_000_000)
    kv_heads: int | None = Field(default=None, ge=1, le=10_000)
    head_dim: int | None = Field(default=None, ge=1, le=10_000)

    @model_validator(mode="after")
    def _check(self) -> InlineModel:
        # A mixture of experts runs a share of its parameters per token, never more than it has.
        if self.active_params_b is not None and self.active_params_b > self.params_b:
            raise ValueError(
                f"active_params_b ({self.active_params_b:g}) must not exceed params_b ({self.params_b:g}), "
                "the model's total parameters"
            )
        return self


# A model named, given by size, or given by its config.json: one form, told apart up front.
ModelRef = Annotated[
    Annotated[str, Tag("str")]
    | Annotated[InlineModel, Tag("InlineModel")]
    | Annotated[ConfigModel, Tag("ConfigModel")],
    Discriminator(_model_form),
]
