"""Training per job: FLOPs, memory per GPU, MFU, scaling by link and fabric, days.

- FLOPs: ``6 * active_params * tokens`` (MoE: the active experts only) plus causal attention,
  ``6 * layers * seq * hidden`` per token for full attention (less for sliding-window layers,
  per-head widths for MLA); LoRA/QLoRA skip the frozen weights' gradients (a catalog factor, ~2/3).
- Memory per GPU, fully sharded (ZeRO-3/FSDP) over all ``G`` GPUs:
  full = 16 bytes/param (bf16 weights and grads, fp32 master, Adam m and v);
  LoRA = 2 bytes/param frozen; QLoRA = 4-bit frozen; plus checkpointed activations.
- Time: ``FLOPs / (G * peak * MFU * scaling)`` at the steady step rate; beyond one server
  ``scaling`` takes the fabric's ``training_scaling``, times its topology's factor once the job
  outgrows one switch hop (``planner.fabric.scaling_factor``). Divided by the goodput that
  failures, checkpoints, restarts and repairs leave (``planner.perf.interruptions``, which also
  gives large jobs hot-spare servers).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace

from planner.fabric import scaling_factor
from planner.perf.interruptions import interruptions
from planner.perf.memo import Memo, query_key
from planner.perf.shapes import ModelShape
from planner.schema.catalog import Gpu, Precision, is_precision
from planner.schema.efficiency import GenerationEfficiency, TrainingAssumptions
from planner.schema.fabric import Fabric

_ADAPTER_SHARE = 0.01  # LoRA adapters as a share of the base parameters (rank ~16-64)
_STATE_BYTES = {"full": 16.0, "lora": 2.0, "qlora": 0.5 * 1.07}
# A checkpoint keeps the trained weights' state without their gradients: bf16 weights, fp32
# master weights and two fp32 Adam moments (ZeRO's 14 B/param; storage.checkpoint_bytes_per_param).
_CHECKPOINT_BYTES_PER_PARAM = _STATE_BYTES["full"] - 2.0
_SECONDS_PER_DAY = 86_400.0


@dataclass(frozen=True)
class TrainingQuery:
    model: ModelShape
    gpu: Gpu
    gpus: int
    tokens: float
    precision: str = "bf16"
    method: str = "full"
    fabric: Fabric | None = None  # None or kind "none": one server
    gpus_per_server: int = 8
    nics_per_server: int = 8  # scale-out NIC ports: how many of a leaf's ports the job takes
    gpus_per_tray: int | None = None  # rack-scale systems: jobs take whole compute trays
    gpu_link: str = "nvlink"
    seq_len: int = 4096
    mfu: float | None = None  # the user's override
    rented: bool = False  # on a cloud's GPUs: failed servers are swapped in from its fleet (no spares)


@dataclass(frozen=True)
class TrainingEstimate:
    fits: bool
    reason: str = ""
    min_gpus: int = 0
    days: float = 0.0
    mfu: float = 0.0
    tflops_per_gpu: float = 0.0
    total_flops: float = 0.0
    memory_per_gpu_gb: float = 0.0
    scaling: float = 0.0
    goodput: float = 1.0  # useful steps / wall time: (1 - restart_loss) x (1 - repair_wait)
    steady_days: float = 0.0  # at the steady-state step rate, before failures and restarts
    steady_tokens_per_s: float = 0.0  # the whole job's, steady state
    goodput_tokens_per_s: float = 0.0  # averaged over wall time: steady x goodput
    hot_spare_servers: int = 0  # held beside the job for its days (compute trays on rack-scale systems)
    hot_spare_gpus: int = 0
    interruptions_per_day: float = 0.0  # the job's, while it runs
    interruptions_expected: float = 0.0  # over its days
    checkpoint_s: float = 0.0  # the pause to write one checkpoint
    checkpoint_interval_hours: float = 0.0  # Young's optimum
    restart_loss: float = 0.0  # share of running time lost to checkpoints, lost steps and restarts
    repair_wait: float = 0.0  # share of wall time waiting for a server back from repair
    factors: dict[str, float | str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def training_flops(model: ModelShape, tokens: float, method: str, seq_len: int, lora_factor: float) -> float:
    dense = 6 * model.active_params_b * 1e9
    # forward + backward (3x) of the causal attention a token takes part in, on average
    attention = 3 * model.attention_flops_per_pair(decode=False) * model.causal_pairs(seq_len) / seq_len
    full = (dense + attention) * tokens
    return full if method == "full" else full * lora_factor


def _state_bytes(q: TrainingQuery) -> float:
    """Weights, gradients and optimizer state of the whole job, before sharding."""
    params = q.model.params_b * 1e9
    state = params * _STATE_BYTES[q.method]
    if q.method != "full":
        state += params * _ADAPTER_SHARE * _STATE_BYTES["full"]
    return state


def checkpoint_bytes(q: TrainingQuery) -> float:
    """What one checkpoint writes: the trained weights' state (a LoRA job's adapters only)."""
    params = q.model.params_b * 1e9
    trained = params if q.method == "full" else params * _ADAPTER_SHARE
    return trained * _CHECKPOINT_BYTES_PER_PARAM


def memory_per_gpu_bytes(q: TrainingQuery, t: TrainingAssumptions, gpus: int | None = None) -> float:
    """Bytes per GPU for the job spread over ``gpus`` (default: the query's count)."""
    n = q.gpus if gpus is None else gpus
    m = q.model
    # Tensor parallelism inside a fast-linked server divides the activations.
    tp = min(n, q.gpus_per_server, 8) if q.gpu_link != "pcie" else 1
    activations = q.seq_len * m.layers * m.hidden_size * t.activation_bytes_per_token_layer_hidden / tp
    return _state_bytes(q) / n + activations


def precision_mfu(gpu: Gpu, gen: GenerationEfficiency, precision: str) -> tuple[Precision, float] | None:
    """The compute precision and MFU for a training precision, or None if unsupported."""
    options = [precision] if precision != "bf16" else ["bf16", "fp16"]
    for p in options:
        if is_precision(p) and p in gpu.tflops_dense and p in gen.mfu:
            return p, gen.mfu[p]
    return None


def scaling(q: TrainingQuery, t: TrainingAssumptions) -> float:
    servers = math.ceil(q.gpus / q.gpus_per_server)
    share = 1.0
    if q.gpus > 1 and q.gpu_link == "pcie":
        share *= t.pcie_multi_gpu_scaling
    if servers > 1 and q.fabric is not None:
        job_ports = math.ceil(q.gpus * q.nics_per_server / q.gpus_per_server)
        fabric_share = min(1.0, q.fabric.training_scaling * scaling_factor(q.fabric, job_ports))
        share *= fabric_share * (1 - t.scale_decay_per_doubling) ** math.log2(servers)
    return share


KEPT: Memo[TrainingEstimate] = Memo(200_000)


def estimate_training(
    q: TrainingQuery, gen: GenerationEfficiency, t: TrainingAssumptions, memory_reserve: float
) -> TrainingEstimate:
    """One job on ``q.gpus`` GPUs (a pure function of its arguments: kept for the process, as
    ``perf.inference`` keeps its own, so what-if variants do not size the same jobs again)."""
    return KEPT.get(query_key(q, gen, t, memory_reserve), lambda: _estimate_training(q, gen, t, memory_reserve))


def _estimate_training(
    q: TrainingQuery, gen: GenerationEfficiency, t: TrainingAssumptions, memory_reserve: float
) -> TrainingEstimate:
    chosen = precision_mfu(q.gpu, gen, q.precision)
    if chosen is None:
        return TrainingEstimate(fits=False, reason=f"{q.gpu.id} cannot train in {q.precision}")
    compute, mfu = chosen
    if q.mfu is not None:
        mfu = q.mfu
    if q.method == "qlora":
        mfu *= t.qlora_mfu_factor
    servers = math.ceil(q.gpus / q.gpus_per_server)
    fabric_kind = q.fabric.kind if q.fabric else "none"
    if servers > 1 and fabric_kind == "none":
        return TrainingEstimate(fits=False, reason=f"{q.gpus} GPUs span {servers} servers: needs a scale-out fabric")
    flops = training_flops(q.model, q.tokens, q.method, q.seq_len, t.lora_flops_factor)
    usable = q.gpu.memory_gb * 1e9 * (1 - memory_reserve)
    mem = memory_per_gpu_bytes(q, t)
    min_gpus = minimum_gpus(q, t, usable)
    factors: dict[str, float | str] = {
        "generation": q.gpu.generation,
        "calibrated": "yes" if gen.calibrated else "no: no published measurements for this generation",
        "compute_precision": compute,
        "mfu": mfu,
        "fabric": q.fabric.id if q.fabric else "none",
        "gpu_link": q.gpu_link,
    }

    def refused(reason: str) -> TrainingEstimate:
        return TrainingEstimate(
            fits=False,
            reason=reason,
            min_gpus=min_gpus,
            total_flops=flops,
            memory_per_gpu_gb=mem / 1e9,
            factors=factors,
        )

    if mem > usable:
        return refused(
            f"needs {mem / 1e9:.1f} GB per GPU at {q.gpus} GPUs; {q.gpu.id} offers {usable / 1e9:.1f} GB usable"
        )
    share = scaling(q, t)
    achieved = q.gpu.tflops_dense[compute] * 1e12 * mfu * share
    steady_s = flops / (q.gpus * achieved)
    # wall time: steady-state steps plus what failures, checkpoints, restarts and repairs cost
    unit = q.gpus_per_tray or q.gpus_per_server
    spanning = fabric_kind != "none" and q.gpus >= unit  # a spare joins over the fabric
    intr = interruptions(q.gpus, unit, checkpoint_bytes(q), t.interruptions, spanning)
    if intr.goodput <= 0:
        return refused(f"{q.gpus} GPUs are interrupted {intr.per_hour:.2f} times an hour: restarts take all the time")
    days = steady_s / _SECONDS_PER_DAY / intr.goodput
    owned = TrainingEstimate(
        fits=True,
        min_gpus=min_gpus,
        days=days,
        steady_days=steady_s / _SECONDS_PER_DAY,
        steady_tokens_per_s=q.tokens / steady_s,
        goodput_tokens_per_s=q.tokens / steady_s * intr.goodput,
        mfu=mfu * share,
        tflops_per_gpu=achieved / 1e12,
        total_flops=flops,
        memory_per_gpu_gb=mem / 1e9,
        scaling=share,
        goodput=intr.goodput,
        hot_spare_servers=intr.hot_spares,
        hot_spare_gpus=intr.hot_spares * unit,
        interruptions_per_day=intr.per_hour * 24,
        interruptions_expected=intr.per_hour * 24 * days * (1 - intr.repair_wait),
        checkpoint_s=intr.checkpoint_s,
        checkpoint_interval_hours=intr.checkpoint_interval_hours,
        restart_loss=intr.restart_loss,
        repair_wait=intr.repair_wait,
        factors=factors,
    )
    return rented_estimate(owned) if q.rented else owned


def rented_estimate(est: TrainingEstimate) -> TrainingEstimate:
    """The same job on a cloud's GPUs: the provider swaps a failed server in from its own
    fleet within the restart, so the job holds no hot spares and never waits for a repair."""
    if not est.fits:
        return est
    goodput = 1.0 - est.restart_loss
    days = est.steady_days / goodput
    return replace(
        est,
        days=days,
        goodput=goodput,
        goodput_tokens_per_s=est.steady_tokens_per_s * goodput,
        hot_spare_servers=0,
        hot_spare_gpus=0,
        interruptions_expected=est.interruptions_per_day * days,
        repair_wait=0.0,
    )


def gpu_counts(gpus_per_server: int, max_servers: int, gpus_per_tray: int | None = None) -> list[int]:
    """Job sizes up to ``max_servers`` servers: powers of two inside the placement unit, then
    whole units (servers; on rack-scale systems compute trays, inside one system and across)."""
    unit = gpus_per_tray or gpus_per_server
    inside = [n for n in (1, 2, 4, 8, 16, 32, 64) if n < unit and unit % n == 0]
    return inside + list(range(unit, max_servers * gpus_per_server + 1, unit))


def minimum_gpus(q: TrainingQuery, t: TrainingAssumptions, usable_bytes: float) -> int:
    """The smallest job size whose memory per GPU fits (0 if none up to the size cap)."""
    for n in gpu_counts(q.gpus_per_server, 0, q.gpus_per_tray):
        if memory_per_gpu_bytes(q, t, n) <= usable_bytes:
            return n
    # Whole units: activations shrink no further than at a full server, so no size below
    # state / (usable - those activations) fits; step up from there.
    per, unit = q.gpus_per_server, q.gpus_per_tray or q.gpus_per_server
    act = memory_per_gpu_bytes(q, t, per) - _state_bytes(q) / per
    if act >= usable_bytes:
        return 0
    n = max(1, math.ceil(_state_bytes(q) / (usable_bytes - act) / unit)) * unit
    while n <= t.max_servers * per:
        if memory_per_gpu_bytes(q, t, n) <= usable_bytes:
            return n
        n += unit  # activations above the floor (fewer GPUs than a server): a few steps at most
    return 0
