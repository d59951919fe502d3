"""An inference service of the problem file (contract: shared/design/problem-format.md,
``inference``): its model, demand, request sizes and latency targets, with the checks that
concern the service alone (``schema.problem.Problem`` checks it against the other workloads)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from planner.schema.base import Strict
from planner.schema.catalog import Precision
from planner.schema.model_ref import ModelRef
from planner.schema.serving import PrefixCacheSpec, SpeculativeSpec
from planner.schema.traffic import NAME_PATTERN, MeasuredThroughput, Name, RequestMix


def _default_precisions() -> list[Precision]:
    return ["bf16", "fp8", "int8", "int4"]


class InferenceService(Strict):
    name: Name = Field(pattern=NAME_PATTERN, max_length=80)
    model: ModelRef | None = Field(
        default=None,
        description="an LLM from catalogs/models.yaml or {params_b: ...}; omit for a generic "
        "service (OCR, speech, vision) planned from `measured` alone",
    )
    measured: list[MeasuredThroughput] = Field(
        default_factory=list, max_length=1000, description="your benchmarks per (GPU, precision, GPUs per replica)"
    )
    precisions: list[Precision] = Field(
        default_factory=_default_precisions,
        min_length=1,
        description="allowed weight precisions; the planner picks",
    )
    requests_per_s: float = Field(gt=0, le=1e7, description="sustained peak")
    input_tokens: int = Field(default=1024, ge=1, le=10_000_000, description="mean prompt length")
    output_tokens: int = Field(default=256, ge=1, le=10_000_000, description="mean generated length")
    ttft_ms: float = Field(default=2000.0, gt=0, le=1e7, description="time to first token target")
    tpot_ms: float = Field(default=100.0, gt=0, le=1e7, description="time per output token target")
    spare_replicas: int = Field(
        default=0, ge=0, le=1000, description="N+k: the rate still holds with this many failure domains down"
    )
    spare_domain: Literal["server", "rack"] = Field(
        default="server",
        description="what fails at once: one server (a compute tray on rack-scale systems) or one whole rack",
    )
    min_spare_share: float = Field(
        default=0.0, ge=0, le=10, description="spare capacity: serve at least (1 + this) x demand (0.2: 20% headroom)"
    )
    start_day: float | None = Field(
        default=None, ge=0, le=36_500, description="serving starts this day (none: day 0, or when its `after` jobs end)"
    )
    end_day: float | None = Field(
        default=None, gt=0, le=36_500, description="serving ends this day (none: at the horizon's end)"
    )
    after: list[Name] = Field(
        default_factory=list,
        description="training jobs whose end starts the service (its model is trained then): it may run on "
        "their GPUs once they are done",
    )
    mix: RequestMix | None = Field(
        default=None,
        description="request sizes as a histogram (or a csv of observed requests); the planner routes each "
        "bucket to the replica kinds that serve it cheapest. input_tokens/output_tokens are then ignored",
    )
    growth_per_year: float | None = Field(
        default=None,
        gt=-1,
        le=100,
        description="demand growth per year (0.5: +50% a year); hardware is then bought by year",
    )
    disaggregation: Literal["auto", "never", "always"] = Field(
        default="auto",
        description="prefill and decode on separate replicas (possibly of different GPUs, the KV cache moved "
        "over NVLink or the NICs): auto lets the planner choose per service, never and always force it",
    )
    requests_per_s_by_year: list[float] | None = Field(
        default=None,
        min_length=1,
        max_length=100,
        description="demand per year (year 1 first; later years repeat the last); hardware is then bought by year",
    )
    prefix_cache: PrefixCacheSpec | None = Field(
        default=None, description="a shared prompt prefix found in the replicas' prefix cache at a hit rate"
    )
    speculative: SpeculativeSpec | None = Field(
        default=None,
        description="allow speculative decoding (a draft model or MTP): replicas with and without it are "
        "offered, the planner picks",
    )

    @model_validator(mode="before")
    @classmethod
    def _rate_from_years(cls, data: object) -> object:
        # `requests_per_s_by_year` alone is enough: year 1 is the sustained rate.
        if isinstance(data, dict) and "requests_per_s" not in data:
            years = data.get("requests_per_s_by_year")
            if isinstance(years, list) and years and isinstance(years[0], (int, float)):
                return {**data, "requests_per_s": years[0]}
        return data

    @property
    def generic(self) -> bool:
        return self.model is None

    @model_validator(mode="after")
    def _check_growth(self) -> InferenceService:
        if self.model is None and not self.measured:
            raise ValueError("a service needs a `model` (an LLM) or a `measured` throughput table (generic service)")
        if self.start_day is not None and self.end_day is not None and self.start_day >= self.end_day:
            raise ValueError(f"start_day {self.start_day:g} must come before end_day {self.end_day:g}")
        if self.growth_per_year is not None and self.requests_per_s_by_year is not None:
            raise ValueError("give growth_per_year or requests_per_s_by_year, not both")
        if self.disaggregation == "always":
            if self.model is None:
                raise ValueError(
                    "disaggregation: always needs a `model` (a generic service has measured replicas only)"
                )
            for key, given in (("mix", self.mix is not None), ("spare_replicas", bool(self.spare_replicas))):
                if given:
                    raise ValueError(
                        f"disaggregation: always cannot be combined with `{key}` (not modelled for disaggregated "
                        "serving yet); use disaggregation: auto or never"
                    )
        for rate in self.requests_per_s_by_year or []:
            if not (0 < rate <= 1e7):
                raise ValueError(f"requests_per_s_by_year values must be in (0, 1e7], got {rate}")
        if self.mix is not None and self.mix.buckets:
            names = {b.label.lower() for b in self.mix.buckets}
            for m in self.measured:
                if m.bucket is None:
                    raise ValueError(f"measured {m.gpu}: a service with a `mix` needs `bucket` on each measurement")
                if m.bucket.lower() not in names:
                    raise ValueError(f"measured {m.gpu}: bucket {m.bucket!r} is not in the mix")
        elif any(m.bucket is not None for m in self.measured):
            raise ValueError("measured `bucket` needs a `mix` on the service")
        if self.prefix_cache is not None and self.mix is None and self.prefix_cache.shared_tokens >= self.input_tokens:
            raise ValueError(
                f"prefix_cache.shared_tokens ({self.prefix_cache.shared_tokens}) must be less than input_tokens "
                f"({self.input_tokens}): a request prefills at least one token of its own"
            )
        if (self.prefix_cache or self.speculative) and self.model is None:
            raise ValueError("prefix_cache and speculative need a `model` (the performance model applies them)")
        return self

    @property
    def windowed(self) -> bool:
        """Serves part of the horizon only (a start, an end, or jobs to wait for)."""
        return self.start_day is not None or self.end_day is not None or bool(self.after)

    @property
    def grows(self) -> bool:
        return bool(self.growth_per_year) or len(set(self.requests_per_s_by_year or [])) > 1

    def requests_per_s_in_year(self, year: int) -> float:
        """Demand in operating year ``year`` (1 = the first year)."""
        if self.requests_per_s_by_year:
            return self.requests_per_s_by_year[min(year, len(self.requests_per_s_by_year)) - 1]
        return self.requests_per_s * (1 + (self.growth_per_year or 0.0)) ** (year - 1)

    def peak_requests_per_s(self, horizon_years: int) -> float:
        """The demand hardware bought at year 0 for the whole horizon must serve: the highest year's."""
        return max(self.requests_per_s_in_year(y) for y in range(1, horizon_years + 1))
