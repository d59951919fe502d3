"""The plan: what to buy, what runs where, what it costs (contract: problem-format.md)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = 1


class Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ServerRow(Out):
    server: str
    gpu: str
    gpus_per_server: int
    fabric: str
    count: int
    unit_price_usd: float
    unit_power_w: float
    racks: int
    year: int = 0  # cash-flow year bought: 0 up front, y at the start of operating year y + 1
    owned: bool = False  # already owned (solve --keep): stays, no capex


class TrainingRow(Out):
    name: str
    gpu: str
    gpus: int
    server: str
    fabric: str
    days: float
    start_day: float
    end_day: float
    deadline_days: float
    precision: str
    method: str
    mfu: float
    tflops_per_gpu: float
    cost_usd: float = 0.0  # its GPUs' share of their pool's TCO for the days it runs (or its rent)
    rented: bool = False
    rent_usd_per_gpu_hour: float | None = None
    # The interruption model (planner.perf.interruptions): the servers (compute trays on
    # rack-scale systems) the job holds beside its own as hot spares, in its pool for its days;
    # useful steps / wall time; interruptions over its days. None: a plan from before the model.
    hot_spare_servers: int = 0
    hot_spare_gpus: int = 0
    goodput: float | None = None
    interruptions_expected: float | None = None
    checkpoint_interval_hours: float | None = None

    @property
    def held_gpus(self) -> int:
        """GPUs held in the pool while the job runs: its own and its hot spares'."""
        return self.gpus + self.hot_spare_gpus


class ReplicaRow(Out):
    gpu: str
    server: str
    gpus_per_replica: int
    precision: str
    count: int
    rps_per_replica: float
    ttft_ms: float  # the p99 that the target binds (as ttft_p99_ms)
    tpot_ms: float  # the p99 that the target binds (as tpot_p99_ms)
    batch: int
    ttft_p99_ms: float = 0.0
    tpot_p99_ms: float = 0.0
    ttft_mean_ms: float = 0.0
    tpot_mean_ms: float = 0.0
    source: str = "model"  # model | measured (your benchmark from the problem file)
    rented: bool = False  # from a cloud, for the whole horizon
    rent_usd_per_gpu_hour: float | None = None
    attention_dp: int = 1  # attention data-parallel groups (MoE wide expert parallelism); 1: plain TP
    fabric: str = "none"  # the pool's scale-out fabric: a training job's pool, when a service reuses it
    per_domain: int = 0  # the most of these replicas one failure domain (the service's spare_domain) holds
    # aggregated | prefill | decode: a disaggregated service's prefill replicas hand each prompt's
    # KV cache to decode replicas of the same kv_group, over kv_link (nvlink | nic)
    mode: str = "aggregated"
    kv_group: str = ""
    kv_link: str = ""
    kv_gb_per_request: float = 0.0
    kv_transfer_ms: float = 0.0  # inside ttft_ms of a prefill row
    # speculative decoding (the service's `speculative`): tokens a step yields on average; None: none
    speculation_tokens_per_step: float | None = None


class RouteShare(Out):
    replica: int  # index into the row's `replicas`
    gpu: str
    precision: str
    gpus_per_replica: int
    share: float  # of the bucket's requests
    rps: float
    ttft_ms: float  # p99 on this kind, for this bucket
    tpot_ms: float  # p99


class BucketRoute(Out):
    bucket: str
    input_tokens: int
    output_tokens: int
    share: float  # of the service's requests
    rps: float
    routes: list[RouteShare]


class InferenceRow(Out):
    name: str
    model: str
    required_rps: float
    capacity_rps: float
    spare_replicas: int
    replicas: list[ReplicaRow]
    spare_domain: str = "server"  # what fails at once: server (a compute tray on rack-scale systems) | rack
    domain_loss_rps: float = 0.0  # the capacity the worst single failure domain takes down
    year: int | None = None  # operating year served (1 = first); None: every year (bought up front)
    start_day: float | None = None  # serving starts (a service with start_day/after); None: day 0
    end_day: float | None = None  # serving ends; None: the horizon's end
    routing: list[BucketRoute] = Field(default_factory=list)  # a request-size mix: bucket -> replica kinds
    cost_usd: float = 0.0  # its GPUs' share of their pools' TCO over the horizon
    cost_usd_per_million_tokens: float | None = None  # per million output tokens at the average load
    serving_mode: str = "aggregated"  # aggregated | disaggregated | mixed (both kinds of replicas)
    # disaggregated: the KV caches the prefill replicas send at their planning capacity (what
    # the NICs are sized for), and prefill : decode GPUs
    kv_transfer_gb_per_s: float = 0.0
    prefill_decode_ratio: str | None = None
    # why this serving mode (with --explain: the cost of the best plan of the other mode)
    mode_reason: str | None = None
    other_mode_tco_usd: float | None = None


class ConstraintRow(Out):
    """One named limit: ``used`` is the very quantity the model holds against ``limit``
    (``used <= limit``, or ``>=`` for floors such as a service's rate)."""

    name: str
    path: str
    limit: float | None
    used: float
    slack: float | None
    unit: str
    binding: bool | None = None  # measured by re-solve (--explain): loosening by `step` saves > $10
    tight: bool = False  # slack below one unit of the smallest purchase
    step: float | None = None
    marginal_usd: float | None = None


class UtilisationRow(Out):
    """An owned pool's GPU-days over the horizon and the share its workloads keep busy."""

    pool: str  # chassis/GPU/fabric
    busy_share: float
    gpus: int = 0
    gpu_days: float = 0.0
    busy_gpu_days: float = 0.0


class AdviceRow(Out):
    """Something a buyer should know about the plan (a part's caveat, money at stake)."""

    kind: str  # e.g. "part"
    message: str
    usd: float | None = None  # the money at stake, where there is one


class SimulationRow(Out):
    """One service replayed through the plan's replicas (``planner simulate``'s row)."""

    name: str
    requests: int
    ttft_p50_ms: float | None
    ttft_p99_ms: float | None
    tpot_p50_ms: float | None
    tpot_p99_ms: float | None
    e2e_p99_ms: float | None
    slo_attainment: float
    analytic_ttft_p99_ms: float
    analytic_tpot_p99_ms: float
    holds: bool


class PurchaseRow(Out):
    category: str
    item: str
    sku: str
    quantity: int
    unit_price_usd: float
    extended_price_usd: float
    unit_power_w: float
    notes: str = ""
    year: int = 0  # cash-flow year bought (0: up front)


class CashFlowRow(Out):
    year: int
    capex_usd: float
    opex_usd: float
    discount_factor: float
    present_value_usd: float
    residual_usd: float = 0.0
    depreciation_usd: float = 0.0


class FixRow(Out):
    constraint: str
    path: str
    current: float | None
    required: float | None


class Diagnosis(Out):
    summary: list[str]
    conflict: list[str] = Field(default_factory=list)
    fixes: list[FixRow] = Field(default_factory=list)
    combined_fix: list[FixRow] = Field(default_factory=list)


class BudgetStep(Out):
    budget_usd: float
    tco_usd: float
    saves_usd: float
    gpus: dict[str, int]


class WhyNotRow(Out):
    gpu: str
    workload: str
    status: str  # cheaper | dearer | impossible
    tco_usd: float | None = None
    extra_usd: float | None = None
    how: str = ""  # the cheapest way it could have served the workload, or why it cannot


class RunnerUp(Out):
    tco_usd: float
    extra_usd: float
    gpus: dict[str, int]


class Explanations(Out):
    budget_steps: list[BudgetStep] = Field(default_factory=list)
    budget_saturates_at_usd: float | None = None  # above this, more budget saves nothing
    runner_up: RunnerUp | None = None
    why_not: list[WhyNotRow] = Field(default_factory=list)
    seconds: float = 0.0


class Plan(Out):
    schema_version: int = SCHEMA_VERSION
    problem: str
    status: Literal["optimal", "feasible", "infeasible"]
    gap: float | None
    solve_seconds: float = 0.0
    tco_usd: float = 0.0
    rent_usd_per_hour: float = 0.0  # cloud GPUs rented for services in year 1, per hour
    capex_usd: float = 0.0
    opex_usd_per_year: float = 0.0
    tco_breakdown_usd: dict[str, float] = Field(default_factory=dict)
    it_power_kw: float = 0.0
    facility_power_kw: float = 0.0
    racks: int = 0
    rack_units: int = 0
    max_rack_power_kw: float = 0.0  # the fullest rack's IT power
    max_air_rack_power_kw: float = 0.0  # the fullest air-cooled rack's IT power (site.air_rack_power_kw caps it)
    max_rack_units: int = 0  # the fullest rack's height
    gpus: dict[str, int] = Field(default_factory=dict)
    servers: list[ServerRow] = Field(default_factory=list)
    network: list[dict[str, Any]] = Field(default_factory=list)
    # front-end Ethernet: racked servers, links (servers' and storage nodes'), ToR and management switches
    frontend: dict[str, int] = Field(default_factory=dict)
    storage_tb: int = 0  # usable TB for the jobs' checkpoints and datasets
    training: list[TrainingRow] = Field(default_factory=list)
    inference: list[InferenceRow] = Field(default_factory=list)
    constraints: list[ConstraintRow] = Field(default_factory=list)
    purchase: list[PurchaseRow] = Field(default_factory=list)
    cash_flows: list[CashFlowRow] = Field(default_factory=list)
    assumptions: dict[str, Any] = Field(default_factory=dict)
    rent_vs_buy: dict[str, dict[str, float]] = Field(default_factory=dict)
    advice: list[AdviceRow] = Field(default_factory=list)
    utilisation: list[UtilisationRow] = Field(default_factory=list)
    simulation: list[SimulationRow] | None = None  # None: not simulated (--no-simulate, or no modelled service)
    diagnosis: Diagnosis | None = None
    explanations: Explanations | None = None
    # solve --scenarios: the two-stage plan's expected TCO, VSS, EVPI and each scenario's TCO
    stochastic: dict[str, Any] | None = None
    verification: list[str] = Field(default_factory=list)
