"""What an inference estimate is asked and answers: the query (model, GPUs, link, sizes, load
or targets), a replica's weight bytes, and the estimate itself. How it is computed:
``planner.perf.inference``."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TypedDict

from planner.perf.precision import stored_weight_bytes
from planner.perf.shapes import ModelShape
from planner.perf.speculation import PrefixCache, Speculation
from planner.schema.catalog import Gpu


@dataclass(frozen=True)
class Link:
    """The in-server GPU-to-GPU link a tensor-parallel replica uses."""

    kind: str  # nvlink | pcie | infinity-fabric | hccs | ethernet
    gb_per_s_one_way: float


@dataclass(frozen=True)
class InferenceQuery:
    model: ModelShape
    gpu: Gpu
    gpus: int
    precision: str
    input_tokens: int
    output_tokens: int
    link: Link
    concurrency: int | None = None  # a steady batch of this many sequences (static-batch rows)
    clients: int | None = None  # a closed loop of this many clients (how serving benchmarks measure)
    rate: float | None = None  # Poisson arrivals, requests/s
    # Targets without a load: size a steady batch (the largest meeting the p99 targets through
    # the fitted queue factors, as MLPerf Server rows are calibrated) instead of a Poisson rate.
    steady_batch: bool = False
    tpot_ms: float | None = None
    ttft_ms: float | None = None
    # Attention data parallelism: the replica's GPUs form this many groups, each running
    # attention (tensor-parallel inside the group) for its own share of the sequences, while
    # the routed experts are spread over all the GPUs (expert parallelism) and tokens reach
    # them by all-to-all. 1: plain tensor parallelism over all the GPUs.
    attention_dp: int = 1
    # a prompt's shared prefix found in the replica's cache, and speculative decoding
    # (planner.perf.speculation); None: neither
    prefix: PrefixCache | None = None
    speculation: Speculation | None = None


@dataclass(frozen=True)
class Weights:
    """A replica's weight bytes: held in memory whole, read in part by an MoE model.

    ``dense`` is everything a token always uses (attention, dense layers, shared experts,
    router, embeddings, head); ``experts`` the routed experts, which every token skips
    but ``k`` of ``E`` of, layer by layer.
    """

    model: ModelShape
    dense: float
    experts: float
    dense_copies: int = 1  # attention data parallelism holds one copy per group

    @property
    def total(self) -> float:
        return self.dense * self.dense_copies + self.experts

    def read(self, tokens: int) -> float:
        """Bytes a pass over ``tokens`` tokens reads: every copy of the dense part, and the
        experts those tokens are routed to (each held, and so read, once)."""
        if self.experts == 0:
            return self.total
        return self.dense * self.dense_copies + self.experts * self.model.experts_touched(tokens)


def weights_of(model: ModelShape, precision: str, int4_overhead: float, dense_copies: int = 1) -> Weights:
    """Weight bytes at ``precision``, never more than the checkpoint's own format per part."""
    routed = model.routed_expert_params_b()
    expert_format = model.experts_format or model.weights_format
    return Weights(
        model=model,
        dense=(model.params_b - routed) * 1e9 * stored_weight_bytes(precision, model.weights_format, int4_overhead),
        experts=routed * 1e9 * stored_weight_bytes(precision, expert_format, int4_overhead),
        dense_copies=dense_copies,
    )


class Footprint(TypedDict):
    """The fields of an estimate known once the replica is sized, fit or not."""

    weights_gb: float
    kv_gb_per_request: float
    factors: dict[str, float | str]


@dataclass(frozen=True)
class InferenceEstimate:
    fits: bool
    reason: str = ""
    batch: int = 0
    output_tokens_per_s: float = 0.0
    output_tokens_per_s_per_gpu: float = 0.0
    ttft_ms: float = 0.0  # means
    tpot_ms: float = 0.0
    ttft_p99_ms: float = 0.0  # what latency targets are held to
    tpot_p99_ms: float = 0.0
    requests_per_s: float = 0.0
    planning_requests_per_s: float = 0.0
    weights_gb: float = 0.0
    kv_gb_per_request: float = 0.0
    max_batch_by_memory: int = 0
    bound: str = ""  # memory or compute, for the decode step at the chosen batch
    factors: dict[str, float | str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        return asdict(self)
