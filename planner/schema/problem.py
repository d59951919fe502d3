"""The problem file: what the user wants planned (contract: shared/design/problem-format.md).

Units are in key names. Every key except ``name`` and at least one workload has
a default. Unknown keys are errors: a typo must never pass silently.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from planner.schema.base import Strict
from planner.schema.model_ref import ModelRef
from planner.schema.service import InferenceService as InferenceService  # where most code imports it
from planner.schema.traffic import NAME_PATTERN, Name
from planner.schema.traffic import MixBucket as MixBucket  # where the verifier and options import it

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
    ops_usd_per_gpu_type_year: float = Field(
        default=25_000.0,
        ge=0,
        le=1e8,
        description="what operating one more GPU type costs per year (estimate: an eighth of a loaded "
        "engineer-year, about $200k, for qualifying its drivers and firmware, images, monitoring, spares "
        "stock and vendor support); owned types only. 0: complexity is free",
    )
    residual_value_share: float = Field(
        default=0.0, ge=0, le=1, description="share of server and network capex recovered by resale at the horizon"
    )
    rent: Literal["none", "on_demand", "reserved"] = Field(
        default="none",
        description="also consider renting cloud GPUs: services rent for the whole horizon (at the reserved price "
        "when 'reserved'), training jobs for their duration (on demand); 'none': buy only",
    )
    buy: bool = Field(default=True, description="false: rent only, buy no hardware (needs `rent`)")
    hardware_lifetime_years: int | None = Field(
        default=None,
        ge=1,
        le=30,
        description="years a server stays in service; shorter than the horizon means replacements are bought "
        "(plans by year). none: hardware lasts the horizon",
    )

    @model_validator(mode="after")
    def _check(self) -> Finance:
        if not self.buy and self.rent == "none":
            raise ValueError("buy: false (rent only) needs rent: on_demand or reserved")
        return self


class Site(Strict):
    power_kw: float | None = Field(
        default=None, gt=0, le=1e7, description="facility power available; IT power x PUE must fit. none: no cap"
    )
    racks: int | None = Field(default=None, ge=1, le=100_000, description="racks available; none: no cap")
    rack_units: int = Field(default=42, ge=1, le=60, description="per rack")
    rack_power_kw: float = Field(default=17.0, gt=0, le=1000, description="per rack, IT power")
    cooling: Literal["air", "liquid", "both"] = Field(
        default="both",
        description="how the site removes heat: air only (liquid-cooled chassis such as NVL72 racks cannot be "
        "planned), liquid only, or both",
    )
    air_rack_power_kw: float = Field(
        default=40.0,
        gt=0,
        le=1000,
        description="most IT power one air-cooled rack can shed (fans and room air; about 35-40 kW in practice): "
        "caps air-cooled racks below rack_power_kw",
    )
    liquid_pue: float | None = Field(
        default=None, ge=1, le=5, description="facility PUE of liquid-cooled racks; none: the catalog's (1.15)"
    )
    existing_racks: int = Field(
        default=0, ge=0, le=100_000, description="racks the site already has, paid for: the first this many are free"
    )


class CatalogOptions(Strict):
    exclude: list[str] = Field(
        default_factory=list,
        description="what may not be bought: GPU ids, chassis ids, classes "
        "(datacenter, workstation, consumer, edge), scale-out fabric ids (ib-ndr-2to1) or topologies "
        "(fat-tree, oversubscribed-2to1, rail-optimised)",
    )
    prices_usd: dict[str, float] = Field(
        default_factory=dict, description="per-GPU price overrides (a quote you have), USD per GPU"
    )
    stock: dict[str, int] = Field(default_factory=dict, description="at most this many units of a GPU can be bought")
    rent_usd_per_gpu_hour: dict[str, float] = Field(
        default_factory=dict, description="cloud rental price overrides (a quote you have), USD per GPU-hour"
    )
    price_decline_per_year: dict[str, float] = Field(
        default_factory=dict,
        description="yearly fall of GPU prices when buying in later years, per GPU id or `default` "
        "(0.15: a GPU bought a year later costs 15% less). Used by plans by year; none given: prices stay",
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
        for gpu, rate in self.price_decline_per_year.items():
            if not (0 <= rate < 1):
                raise ValueError(f"price_decline_per_year.{gpu} must be a share in [0, 1), got {rate}")
        return self


class Policy(Strict):
    max_gpu_types: int | None = Field(default=None, ge=1, le=100, description="at most this many GPU types")
    vendors: list[Literal["nvidia", "amd", "intel", "huawei", "cambricon", "biren", "hygon", "apple"]] | None = Field(
        default=None, description="only GPUs from these vendors"
    )
    allow: list[Literal["end-of-life", "announced", "workstation", "consumer", "edge"]] = Field(
        default_factory=list,
        description="parts beyond current data-centre ones that may be planned with: end-of-life or "
        "announced parts, workstation, consumer (GeForce) or edge devices",
    )
    simplicity_tolerance: float = Field(
        default=0.01,
        ge=0,
        le=0.5,
        description="share of the lowest TCO worth paying for a simpler fleet: among plans within it, the one "
        "with the fewest vendors, then GPU types, is chosen (the cheapest of those); 0: the cheapest plan",
    )
    purchases: Literal["auto", "upfront", "yearly"] = Field(
        default="auto",
        description="when hardware is bought: 'upfront' all at year 0; 'yearly' at the start of any year "
        "(a purchase schedule); 'auto' yearly when demand grows, jobs start after year 1, prices decline "
        "or hardware retires within the horizon",
    )


class TrainingJob(Strict):
    name: Name = Field(pattern=NAME_PATTERN, max_length=80)
    model: ModelRef = Field(
        description="a name from catalogs/models.yaml, {params_b: ...}, or {config: path/to/config.json}"
    )
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
        horizon_days = self.horizon_years * 365
        for svc in self.inference:
            for dep in svc.after:
                if dep.lower() not in jobs:
                    raise ValueError(f"service {svc.name!r}: `after` names unknown training job {dep!r}")
            for key in ("start_day", "end_day"):
                day = getattr(svc, key)
                if day is not None and day > horizon_days:
                    raise ValueError(f"service {svc.name!r}: {key} {day:g} is beyond the {horizon_days}-day horizon")
            if svc.windowed and self.yearly:
                raise ValueError(
                    f"service {svc.name!r}: start_day, end_day and after need one purchase up front; this problem "
                    "plans purchases by year (set policy.purchases: upfront, or drop growth and lifetimes)"
                )
        life = self.finance.hardware_lifetime_years
        if self.policy.purchases == "upfront" and life is not None and life < self.horizon_years:
            raise ValueError(
                f"hardware lasting {life} years cannot serve a {self.horizon_years}-year horizon when bought "
                "upfront: set policy.purchases to yearly (or auto)"
            )
        return self

    @property
    def yearly(self) -> bool:
        """Plan purchases year by year (a purchase schedule) rather than all at year 0."""
        if self.policy.purchases != "auto":
            return self.policy.purchases == "yearly"
        if self.horizon_years == 1:
            return False
        life = self.finance.hardware_lifetime_years
        return (
            any(s.grows for s in self.inference)
            or any(j.release_day >= 365 for j in self.training)
            or any(v > 0 for v in self.catalog.price_decline_per_year.values())
            or (life is not None and life < self.horizon_years)
        )


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
