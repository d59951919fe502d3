"""The problem file: what the user wants planned (contract: shared/design/problem-format.md).

Units are in key names. Every key except ``name`` and at least one workload has
a default. Unknown keys are errors: a typo must never pass silently.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from planner.schema.catalog import Precision


class Strict(BaseModel):
    # strict: YAML `true` is not a number and "12" is not 12; NaN and inf are refused.
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, frozen=True)


Name = str  # workload names: used in constraint names and dotted paths
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$"
MAX_COUNT = 10_000_000  # refuse absurd sizes rather than hang


class Finance(Strict):
    budget_usd: float | None = Field(
        default=None, gt=0, le=1e12, description="cap on up-front capital (servers, network, racks); none: no cap"
    )
    discount_rate: float = Field(default=0.08, ge=0, le=1, description="per year; opex of year k is divided by (1+r)^k")
    electricity_usd_per_kwh: float = Field(default=0.12, ge=0, le=10)
    pue: float = Field(default=1.35, ge=1, le=5, description="facility power / IT power")
    colocation_usd_per_kw_month: float = Field(default=0.0, ge=0, le=10_000, description="on IT power")
    maintenance_rate: float = Field(default=0.05, ge=0, le=1, description="share of hardware capex per year")
    utilization: float = Field(
        default=0.7, ge=0, le=1, description="average IT power as a share of nameplate (for the energy bill)"
    )
    ops_usd_per_server_year: float = Field(
        default=0.0, ge=0, le=1e7, description="staff and operations cost per server per year"
    )
    residual_value_share: float = Field(
        default=0.0, ge=0, le=1, description="share of server and network capex recovered by resale at the horizon"
    )
    rent: Literal["none", "on_demand", "reserved"] = Field(
        default="none",
        description="also consider renting cloud GPUs: services rent for the whole horizon (at the reserved price "
        "when 'reserved'), training jobs for their duration (on demand); 'none': buy only",
    )


class Site(Strict):
    power_kw: float | None = Field(
        default=None, gt=0, le=1e7, description="facility power available; IT power x PUE must fit. none: no cap"
    )
    racks: int | None = Field(default=None, ge=1, le=100_000, description="racks available; none: no cap")
    rack_units: int = Field(default=42, ge=1, le=60, description="per rack")
    rack_power_kw: float = Field(default=17.0, gt=0, le=1000, description="per rack, IT power")


class CatalogOptions(Strict):
    exclude: list[str] = Field(default_factory=list, description="GPU ids that may not be bought")
    prices_usd: dict[str, float] = Field(
        default_factory=dict, description="per-GPU price overrides (a quote you have), USD per GPU"
    )
    stock: dict[str, int] = Field(default_factory=dict, description="at most this many units of a GPU can be bought")
    rent_usd_per_gpu_hour: dict[str, float] = Field(
        default_factory=dict, description="cloud rental price overrides (a quote you have), USD per GPU-hour"
    )
    price_decline_per_year: dict[str, float] = Field(
        default_factory=dict, description="reserved for multi-period planning"
    )

    @model_validator(mode="after")
    def _check(self) -> CatalogOptions:
        for gpu, price in self.prices_usd.items():
            if not (0 < price <= 1e8):
                raise ValueError(f"prices_usd.{gpu} must be a positive price in USD, got {price}")
        for gpu, rent in self.rent_usd_per_gpu_hour.items():
            if not (0 < rent <= 1e4):
                raise ValueError(f"rent_usd_per_gpu_hour.{gpu} must be a positive price in USD, got {rent}")
        for gpu, units in self.stock.items():
            if not (0 <= units <= MAX_COUNT):
                raise ValueError(f"stock.{gpu} must be between 0 and {MAX_COUNT}, got {units}")
        return self


class Policy(Strict):
    max_gpu_types: int | None = Field(default=None, ge=1, le=100, description="at most this many GPU types")
    vendors: list[Literal["nvidia", "amd", "intel", "huawei"]] | None = Field(
        default=None, description="only GPUs from these vendors"
    )


class InlineModel(Strict):
    """A dense model given by size; the shape is derived unless given (see perf.shapes)."""

    params_b: float = Field(gt=0, le=100_000)
    active_params_b: float | None = Field(default=None, gt=0, le=100_000)
    layers: int | None = Field(default=None, ge=1, le=1000)
    hidden_size: int | None = Field(default=None, ge=1, le=1_000_000)
    kv_heads: int | None = Field(default=None, ge=1, le=10_000)
    head_dim: int | None = Field(default=None, ge=1, le=10_000)


class TrainingJob(Strict):
    name: Name = Field(pattern=NAME_PATTERN, max_length=80)
    model: str | InlineModel = Field(description="a name from catalogs/models.yaml, or {params_b: ...}")
    tokens: float = Field(gt=0, le=1e16, description="tokens to train on")
    deadline_days: float = Field(gt=0, le=36_500, description="must finish by this day of the horizon")
    release_day: float = Field(default=0.0, ge=0, le=36_500, description="may not start before this day")
    after: list[Name] = Field(default_factory=list, description="may start only when these jobs are done")
    precision: Literal["bf16", "fp8"] = "bf16"
    method: Literal["full", "lora", "qlora"] = "full"
    seq_len: int = Field(default=4096, ge=1, le=10_000_000, description="training sequence length, tokens")
    mfu: float | None = Field(default=None, gt=0, le=1, description="override the catalog MFU assumption")

    @model_validator(mode="after")
    def _check(self) -> TrainingJob:
        if self.release_day >= self.deadline_days:
            raise ValueError(f"release_day ({self.release_day}) must be before deadline_days ({self.deadline_days})")
        return self


class MeasuredThroughput(Strict):
    """Your own benchmark of one replica: it wins over the performance model.

    ``requests_per_s`` is what one replica sustains while meeting the service's
    latency targets (no headroom is taken off it). For a generic (non-LLM)
    service this table is the only source of figures.
    """

    gpu: str = Field(min_length=1, description="GPU id")
    precision: Precision = "bf16"
    gpus_per_replica: int = Field(default=1, ge=1, le=1024)
    requests_per_s: float = Field(gt=0, le=1e7, description="per replica, at the service's targets")
    ttft_ms: float | None = Field(default=None, gt=0, le=1e7, description="measured; checked against the target")
    tpot_ms: float | None = Field(default=None, gt=0, le=1e7, description="measured; checked against the target")


class InferenceService(Strict):
    name: Name = Field(pattern=NAME_PATTERN, max_length=80)
    model: str | InlineModel | None = Field(
        default=None,
        description="an LLM from catalogs/models.yaml or {params_b: ...}; omit for a generic "
        "service (OCR, speech, vision) planned from `measured` alone",
    )
    measured: list[MeasuredThroughput] = Field(
        default_factory=list, max_length=1000, description="your benchmarks per (GPU, precision, GPUs per replica)"
    )
    precisions: list[Precision] = Field(
        default_factory=lambda: ["bf16", "fp8", "int8", "int4"],
        min_length=1,
        description="allowed weight precisions; the planner picks",
    )
    requests_per_s: float = Field(gt=0, le=1e7, description="sustained peak")
    input_tokens: int = Field(default=1024, ge=1, le=10_000_000, description="mean prompt length")
    output_tokens: int = Field(default=256, ge=1, le=10_000_000, description="mean generated length")
    ttft_ms: float = Field(default=2000.0, gt=0, le=1e7, description="time to first token target")
    tpot_ms: float = Field(default=100.0, gt=0, le=1e7, description="time per output token target")
    spare_replicas: int = Field(default=0, ge=0, le=1000, description="N+k redundancy")
    growth_per_year: float | None = Field(
        default=None,
        gt=-1,
        le=100,
        description="demand growth per year; until multi-period planning, "
        "the plan serves the last year's (peak) demand",
    )
    requests_per_s_by_year: list[float] | None = Field(
        default=None,
        min_length=1,
        max_length=100,
        description="demand per year (year 1 first); the plan serves the peak",
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
        if self.growth_per_year is not None and self.requests_per_s_by_year is not None:
            raise ValueError("give growth_per_year or requests_per_s_by_year, not both")
        for rate in self.requests_per_s_by_year or []:
            if not (0 < rate <= 1e7):
                raise ValueError(f"requests_per_s_by_year values must be in (0, 1e7], got {rate}")
        return self

    def peak_requests_per_s(self, horizon_years: int) -> float:
        """The demand the hardware bought at year 0 must serve: the highest year's."""
        if self.requests_per_s_by_year:
            return max(self.requests_per_s_by_year[:horizon_years])
        if self.growth_per_year:
            return max(self.requests_per_s, self.requests_per_s * (1 + self.growth_per_year) ** (horizon_years - 1))
        return self.requests_per_s


class Problem(Strict):
    name: str = Field(min_length=1, max_length=200)
    description: str = ""
    horizon_years: int = Field(default=3, ge=1, le=30, description="TCO horizon")
    finance: Finance = Field(default_factory=Finance)
    site: Site = Field(default_factory=Site)
    catalog: CatalogOptions = Field(default_factory=CatalogOptions)
    policy: Policy = Field(default_factory=Policy)
    training: list[TrainingJob] = Field(default_factory=list, max_length=1000)
    inference: list[InferenceService] = Field(default_factory=list, max_length=1000)

    @model_validator(mode="after")
    def _check(self) -> Problem:
        if not self.training and not self.inference:
            raise ValueError("a problem needs at least one workload under `training` or `inference`")
        seen: dict[str, str] = {}
        for kind, items in (("training", self.training), ("inference", self.inference)):
            for item in items:
                key = item.name.lower()
                if key in seen:
                    raise ValueError(f"workload name {item.name!r} is used twice ({seen[key]} and {kind})")
                seen[key] = kind
        jobs = {j.name.lower(): j for j in self.training}
        for job in self.training:
            for dep in job.after:
                if dep.lower() not in jobs:
                    raise ValueError(f"training job {job.name!r}: `after` names unknown job {dep!r}")
                if dep.lower() == job.name.lower():
                    raise ValueError(f"training job {job.name!r} cannot run after itself")
        _check_acyclic(self.training)
        return self


def _check_acyclic(jobs: list[TrainingJob]) -> None:
    deps = {j.name.lower(): [d.lower() for d in j.after] for j in jobs}
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        if state.get(node) == 2:
            return
        if state.get(node) == 1:
            raise ValueError("training jobs' `after` form a cycle: " + " -> ".join([*trail, node]))
        state[node] = 1
        for dep in deps[node]:
            visit(dep, [*trail, node])
        state[node] = 2

    for name in deps:
        visit(name, [])
