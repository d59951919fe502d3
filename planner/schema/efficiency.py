"""Pydantic models for ``catalogs/efficiency.yaml``: the achieved shares of peak per GPU
generation, and the serving and training assumptions (each sourced in the file)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from planner.schema.catalog import Precision, Source, Strict, is_precision


class GenerationEfficiency(Strict):
    """Achieved fractions of peak, per GPU generation: visible, overridable assumptions."""

    bandwidth_eff: float = Field(gt=0, le=1, description="achieved share of HBM bandwidth in decode")
    compute_eff: dict[Precision | Literal["default"], float] = Field(
        description="achieved share of dense peak FLOPS in prefill and compute-bound decode, per compute "
        "precision ('default' for the others): low-precision peaks are harder to reach"
    )
    mfu: dict[Precision, float] = Field(description="training model-FLOPs utilisation per precision")
    calibrated: bool = Field(
        default=False, description="fitted to published measurements (else a judgement, outside the calibrated range)"
    )
    moe_prefill_eff: float = Field(
        default=1.0,
        gt=0,
        le=1,
        description="share of compute_eff a mixture-of-experts model reaches in prefill (grouped expert GEMMs, "
        "token routing)",
    )

    def compute_eff_for(self, precision: str) -> float:
        default = self.compute_eff["default"]
        return self.compute_eff.get(precision, default) if is_precision(precision) else default

    @model_validator(mode="after")
    def _check(self) -> GenerationEfficiency:
        if "default" not in self.compute_eff:
            raise ValueError("compute_eff needs a 'default' entry")
        if not all(0 < v <= 1 for v in [*self.compute_eff.values(), *self.mfu.values()]):
            raise ValueError("efficiencies are shares of peak: in (0, 1]")
        return self

    source: Source
    notes: str = ""


class ServingAssumptions(Strict):
    memory_reserve_fraction: float = Field(
        ge=0, lt=1, description="share of GPU memory kept for activations, runtime and fragmentation"
    )
    max_batch: int = Field(ge=1, description="largest concurrent batch an engine schedules per replica")
    headroom: float = Field(gt=0, le=1, description="plan replicas to run at this share of their capacity")
    step_overhead_ms: float = Field(ge=0, description="fixed per decode step: scheduling, kernel launch")
    prefill_overhead_us_per_layer: float = Field(
        ge=0, description="fixed cost per layer of a prefill pass (kernel launches; no CUDA graphs there)"
    )
    token_budget: int = Field(
        default=8192, ge=1, description="tokens one engine iteration processes (chunked prefill; vLLM/TRT-LLM 8192)"
    )
    ttft_overhead_ms: float = Field(
        default=0.0, ge=0, description="fixed per request before its first token: API server, tokenizer, streaming"
    )
    disagg_handoff_ms: float = Field(
        default=0.0,
        ge=0,
        description="fixed per request of a disaggregated deployment, beyond prefill and the KV bytes' "
        "transfer: routing to a prefill and a decode worker, transfer setup, the decode worker's admission",
    )
    moe_layer_overhead_us: float = Field(
        default=0.0, ge=0, description="fixed per mixture-of-experts layer per iteration: routing, expert dispatch"
    )
    moe_prefill_overhead_us_per_layer: float = Field(
        default=0.0,
        ge=0,
        description="fixed per mixture-of-experts layer per iteration that prefills: token sort, expert dispatch",
    )
    closed_loop_waves: int = Field(
        default=10,
        ge=1,
        description="requests per client in a closed-loop benchmark (InferenceMAX: num_prompts = 10 x concurrency)",
    )
    closed_loop_length_low: float = Field(
        default=0.8,
        gt=0,
        le=1,
        description="closed-loop benchmark lengths are uniform in [low x L, L] (InferenceMAX random_range_ratio 0.8)",
    )
    ttft_queue_iterations: float = Field(
        ge=0, description="mean engine iterations a new request waits under load before its first token"
    )
    ttft_p99_factor: float = Field(ge=1, description="p99 / mean time to first token at load")
    tpot_p99_factor: float = Field(ge=1, description="p99 / mean time per output token at load")
    link_latency_us: dict[str, float] = Field(description="per all-reduce, by in-server GPU link kind")
    link_eff: float = Field(gt=0, le=1, description="achieved share of link bandwidth in all-reduce")
    int4_overhead: float = Field(ge=1, description="bytes factor for int4 group scales and zeros")
    source: Source


class InterruptionAssumptions(Strict):
    """What interrupts a training job and what each interruption costs (planner.perf.interruptions)."""

    per_gpu_hour: float = Field(
        gt=0, description="unexpected job interruptions per GPU-hour of a synchronous job (all causes)"
    )
    hardware_share: float = Field(
        ge=0, le=1, description="share of interruptions that take a server away for repair (hardware faults)"
    )
    restart_minutes: float = Field(
        ge=0, description="per interruption: detect, tear down, reschedule, reload the last checkpoint, warm up"
    )
    checkpoint_write_gb_per_s_per_gpu: float = Field(
        gt=0, description="checkpoint write bandwidth to shared storage per GPU of the job (GB/s): sets the pause"
    )
    repair_hours: float = Field(
        ge=0, description="a failed server's time out of service (diagnose, swap parts, burn in) when no spare waits"
    )
    source: Source
    notes: str = ""


class TrainingAssumptions(Strict):
    pcie_multi_gpu_scaling: float = Field(
        gt=0, le=1, description="throughput share kept when a job spans GPUs linked only by PCIe"
    )
    scale_decay_per_doubling: float = Field(
        ge=0, lt=1, description="throughput share lost per doubling of the server count"
    )
    lora_flops_factor: float = Field(gt=0, le=1, description="LoRA FLOPs as a share of full training")
    qlora_mfu_factor: float = Field(gt=0, le=1, description="QLoRA MFU as a share of LoRA's (dequantisation)")
    activation_bytes_per_token_layer_hidden: float = Field(
        gt=0, description="checkpointed activation bytes per token x layer x hidden (recompute on)"
    )
    max_servers: int = Field(ge=1, description="largest job size considered, in servers")
    interruptions: InterruptionAssumptions = Field(
        description="failures, checkpoints, restarts and repairs: they set each job's goodput and hot spares"
    )
    source: Source


class EfficiencyFile(Strict):
    schema_version: Literal[1] = 1
    generations: dict[str, GenerationEfficiency]
    serving: ServingAssumptions
    training: TrainingAssumptions
