"""The base of every problem-file model: strict types, unknown keys refused."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Strict(BaseModel):
    # strict: YAML `true` is not a number and "12" is not 12; NaN and inf are refused. Built on
    # first use: a problem file read as kept (``io.problem_cache``) validates none of them.
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, frozen=True, defer_build=True)
