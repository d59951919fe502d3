"""Options: one way to deploy a workload (GPU, chassis, fabric, precision, parallelism)
with its figures, and the reasons other ways were rejected."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeAlias

from planner.bom import PoolKey
from planner.perf.inference_types import InferenceEstimate
from planner.perf.shapes import ModelShape
from planner.perf.speculation import Speculation
from planner.perf.training import TrainingEstimate

# The most servers a pool could hold, with the reason when that is 0 (see options.pools.pool_limit).
PoolLimit: TypeAlias = Callable[[PoolKey], tuple[int, str]]


@dataclass(frozen=True)
class InferenceOption:
    service: str
    pool: PoolKey
    precision: str
    gpus_per_replica: int
    estimate: InferenceEstimate
    measured: bool = False  # from the user's benchmark, not the model
    rent_usd_per_gpu_hour: float | None = None  # set: rented from a cloud for the whole horizon
    # a service with a request-size mix: this kind's figures per bucket (None: cannot meet its targets)
    buckets: tuple[InferenceEstimate | None, ...] = ()
    # attention data-parallel groups (MoE wide expert parallelism: the routed experts spread
    # over all the replica's GPUs, attention tensor-parallel inside each group); 1: plain TP
    attention_dp: int = 1
    # a mix's kind serving more than one bucket: each bucket's capacity times this (prompts of
    # other sizes lengthen its iterations; from the mix sharing a replica, planner.perf.load_mix);
    # 0: its buckets cannot share a replica within the targets; 1: no slowdown
    colocated_factor: float = 1.0
    # aggregated (prefill and decode on the same replica), or one phase of a disaggregated
    # deployment (planner.options.disagg): its replicas pair with the other phase's in the same
    # KV group, and each request's prompt cache (kv_gb_per_request) crosses between them
    mode: str = "aggregated"
    kv_group: str = ""
    kv_gb_per_request: float = 0.0
    speculation: Speculation | None = None  # speculative decoding (a draft model or MTP); None: plain

    @property
    def gpu(self) -> str:
        return self.pool.gpu

    @property
    def disaggregated(self) -> bool:
        return self.mode != "aggregated"

    @property
    def tensor_parallel(self) -> int:
        """GPUs sharing one sequence's attention (the whole replica without attention DP)."""
        return self.gpus_per_replica // self.attention_dp

    @property
    def layout(self) -> str:
        """``TP8``, or ``EP72 DP18xTP4`` for wide expert parallelism with attention DP."""
        spec = f" spec:{self.speculation.label}" if self.speculation else ""
        if self.attention_dp == 1:
            return f"TP{self.gpus_per_replica}{spec}"
        return f"EP{self.gpus_per_replica} DP{self.attention_dp}xTP{self.tensor_parallel}{spec}"

    @property
    def rps_per_replica(self) -> float:
        """Planning capacity: the replica's throughput at the headroom utilisation."""
        return self.estimate.planning_requests_per_s

    def bucket_rps(self, k: int) -> float:
        """Planning capacity of a replica serving only bucket ``k`` of the mix (0: it cannot)."""
        e = self.buckets[k]
        return e.planning_requests_per_s if e is not None else 0.0

    @property
    def capacities(self) -> tuple[float, ...]:
        return tuple(self.bucket_rps(k) for k in range(len(self.buckets))) or (self.rps_per_replica,)


@dataclass(frozen=True)
class TrainingOption:
    job: str
    pool: PoolKey
    gpus: int
    estimate: TrainingEstimate
    rent_usd_per_gpu_hour: float | None = None  # set: rented from a cloud for the job's duration

    @property
    def gpu(self) -> str:
        return self.pool.gpu

    @property
    def days(self) -> float:
        return self.estimate.days

    @property
    def held_gpus(self) -> int:
        """The GPUs the job holds in its pool while it runs: its own and its hot spares'."""
        return self.gpus + self.estimate.hot_spare_gpus


@dataclass(frozen=True)
class Rejection:
    gpu: str
    server: str
    reason: str


@dataclass
class WorkloadOptions:
    name: str
    kind: str  # training | inference
    shape: ModelShape | None  # None: a generic service planned from measurements

    @property
    def label(self) -> str:
        return self.shape.name if self.shape else "generic"

    inference: list[InferenceOption] = field(default_factory=list)
    training: list[TrainingOption] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)

    @property
    def feasible(self) -> bool:
        return bool(self.inference or self.training)

    def reasons_by_gpu(self) -> dict[str, list[str]]:
        usable = {o.gpu for o in self.inference} | {o.gpu for o in self.training}
        out: dict[str, list[str]] = {}
        for r in self.rejected:
            if r.gpu not in usable and r.reason not in out.setdefault(r.gpu, []):
                out[r.gpu].append(r.reason)
        return out
