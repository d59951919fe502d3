"""Pydantic models for the bundled catalogs (GPUs, servers, models, cloud prices; fabrics in
``schema/fabric.py``, the efficiency assumptions in ``schema/efficiency.py``).

Every figure in a catalog carries a source and a date. Units are in the field
names: ``_gb`` (10^9 bytes), ``_gb_per_s`` (10^9 bytes per second), ``_gbit_per_s``
(10^9 bits per second), ``_w``, ``_usd``, ``_u`` (rack units).
"""

from __future__ import annotations

import datetime as dt
from typing import Literal, TypeGuard

from pydantic import BaseModel, ConfigDict, Field, model_validator

Precision = Literal["fp32", "bf16", "fp16", "fp8", "int8", "int4", "fp4"]
PRECISIONS: tuple[Precision, ...] = ("fp32", "bf16", "fp16", "fp8", "int8", "int4", "fp4")


def is_precision(name: str) -> TypeGuard[Precision]:
    """Whether ``name`` is one of the catalog's precision names."""
    return name in PRECISIONS


# What a part is, for the buyer (problem-format.md, "Added for issues 8-15"): whether it can
# still be bought, and where it is meant to run. A data-centre plan opts in to the others.
Lifecycle = Literal["current", "end-of-life", "announced"]
LIFECYCLES: tuple[Lifecycle, ...] = ("current", "end-of-life", "announced")
DeploymentClass = Literal["datacenter", "workstation", "consumer", "edge"]
DEPLOYMENT_CLASSES: tuple[DeploymentClass, ...] = ("datacenter", "workstation", "consumer", "edge")
Confidence = Literal["high", "medium", "low"]

_LIFECYCLE_DOC = "current: on sale; end-of-life: no longer sold new; announced: not shipping yet (see announced_date)"
_ANNOUNCED_DOC = "when an announced part was announced; required with lifecycle: announced"
_LEAD_TIME_DOC = "typical weeks from order to delivery, where a public figure exists (its source in notes)"


class Strict(BaseModel):
    # a validator is built on its class's first validation, not at import: a run that reads the
    # bundled catalog as kept (``planner.catalog_cache``) validates none of them
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class Source(Strict):
    """Where a figure comes from. ``date`` is when the source was published or read."""

    title: str = Field(min_length=1)
    url: str = ""
    date: dt.date


class Price(Strict):
    """A purchase price. Prices are estimates unless the user supplies a quote."""

    usd: float = Field(ge=0)
    estimate: bool = True
    source: Source
    note: str = ""


class Gpu(Strict):
    id: str = Field(min_length=1, description="catalog id, e.g. H100-SXM")
    name: str
    vendor: Literal["nvidia", "amd", "intel", "huawei", "cambricon", "biren", "hygon", "apple"]
    generation: str = Field(description="key into efficiency.yaml, e.g. hopper, ampere, ada, cdna3")
    form_factor: Literal["sxm", "pcie", "oam", "superchip", "edge", "mezzanine"]
    memory_gb: float = Field(gt=0)
    memory_bandwidth_gb_per_s: float = Field(gt=0)
    tflops_dense: dict[Precision, float] = Field(
        description="dense (no 2:4 sparsity) tensor TFLOPS/TOPS per natively supported precision"
    )
    tdp_w: float = Field(gt=0)
    nvlink_gb_per_s: float = Field(
        ge=0, description="per-GPU GPU-to-GPU link bandwidth, both directions summed; 0 if none"
    )
    nvlink_domain: int = Field(ge=1, description="GPUs reachable over that link without the host")
    host_link_gb_per_s: float = Field(gt=0, description="PCIe x16 bandwidth, one direction")
    lifecycle: Lifecycle = Field(description=_LIFECYCLE_DOC)
    announced_date: dt.date | None = Field(default=None, description=_ANNOUNCED_DOC)
    deployment_class: DeploymentClass = Field(
        description="datacenter (server parts), workstation (desk-side professional cards), consumer "
        "(GeForce-class: no ECC, licence limits data-centre use), edge (embedded modules, SoCs)"
    )
    lead_time_weeks: float | None = Field(default=None, ge=0, description=_LEAD_TIME_DOC)
    confidence: Confidence = Field(
        description="how well public figures agree: high (vendor datasheet), medium (sources conflict, or "
        "secondary sources only), low (thin or derived figures; see notes)"
    )
    price: Price
    source: Source
    notes: str = ""

    @model_validator(mode="after")
    def _check(self) -> Gpu:
        if "int4" in self.tflops_dense:
            raise ValueError("int4 is weight-only: it computes at 16-bit, list no int4 TFLOPS")
        if not ({"bf16", "fp16"} & self.tflops_dense.keys()):
            raise ValueError("a GPU needs a 16-bit (bf16 or fp16) dense TFLOPS figure")
        _check_lifecycle(self.lifecycle, self.announced_date)
        return self


def _check_lifecycle(lifecycle: Lifecycle, announced_date: dt.date | None) -> None:
    if lifecycle == "announced" and announced_date is None:
        raise ValueError("an announced part needs its announced_date")


class ServerChassis(Strict):
    id: str = Field(min_length=1)
    name: str
    kind: Literal["hgx", "pcie", "workstation", "edge", "rack-scale", "oam"]
    gpus: list[str] = Field(min_length=1, description="GPU ids this chassis takes")
    gpus_per_server: int = Field(ge=1)
    gpu_link: Literal["nvlink", "pcie", "infinity-fabric", "hccs", "ethernet", "mlu-link", "blink"] = Field(
        description="how the GPUs in one server talk to each other"
    )
    gpu_link_gb_per_s: float | None = Field(
        default=None,
        ge=0,
        description="override per-GPU link bandwidth; default: GPU nvlink_gb_per_s (nvlink/"
        "infinity-fabric/hccs/ethernet) or host_link_gb_per_s (pcie)",
    )
    rack_units: int = Field(ge=1)
    base_power_w: float = Field(ge=0, description="everything but the GPUs and scale-out NICs")
    base_price: Price = Field(description="chassis, CPUs, memory, storage; GPUs excluded")
    scaleout_nics: int = Field(ge=0, description="scale-out NIC ports per server; 0: cannot join a cluster")
    lifecycle: Lifecycle = Field(description=_LIFECYCLE_DOC)
    announced_date: dt.date | None = Field(default=None, description=_ANNOUNCED_DOC)
    deployment_class: DeploymentClass = Field(
        description="datacenter (rack servers), workstation (desk-side towers), edge (embedded boxes)"
    )
    lead_time_weeks: float | None = Field(default=None, ge=0, description=_LEAD_TIME_DOC)
    needs_rack: bool = Field(
        default=True,
        description="False: stands on a desk or shelf (workstation, edge box); no rack is bought for it",
    )
    gpus_per_tray: int | None = Field(
        default=None,
        ge=1,
        description="rack-scale systems: GPUs per compute tray, the unit a job or replica is placed on "
        "(the system is still bought whole)",
    )
    nvlink_domain: int | None = Field(
        default=None,
        ge=1,
        description="GPUs in one NVLink (scale-up) domain in this system; default: gpus_per_server",
    )
    cooling: Literal["air", "liquid"] = Field(
        default="air",
        description="how its heat leaves: air (fans; racks capped at site.air_rack_power_kw) or liquid "
        "(direct-to-chip: only on sites with liquid cooling, priced per kW, at the liquid PUE)",
    )
    source: Source
    notes: str = ""

    @model_validator(mode="after")
    def _check(self) -> ServerChassis:
        _check_lifecycle(self.lifecycle, self.announced_date)
        if self.kind == "rack-scale" and self.gpus_per_tray is None:
            raise ValueError(f"rack-scale system {self.id} needs gpus_per_tray")
        if self.gpus_per_tray is not None and self.gpus_per_server % self.gpus_per_tray:
            raise ValueError(f"{self.id}: gpus_per_server must be a multiple of gpus_per_tray")
        if self.nvlink_domain is not None and self.nvlink_domain > self.gpus_per_server:
            raise ValueError(f"{self.id}: nvlink_domain cannot exceed gpus_per_server")
        return self

    @property
    def trays(self) -> int:
        """Compute trays per system (1 where the system is not built of trays)."""
        return self.gpus_per_server // self.gpus_per_tray if self.gpus_per_tray else 1


class LlmModel(Strict):
    """A language model's shape: what its memory, bandwidth and FLOPs follow from.

    A dense full-attention model needs only the fields without defaults. The optional ones
    describe what newer models bring: multi-head latent attention (MLA), sliding-window or
    chunked local layers, shared + routed experts on some layers, and checkpoints published
    in fewer bits than 16. Their defaults describe a dense GQA/MHA model in 16-bit.
    """

    id: str = Field(min_length=1)
    name: str
    params_b: float = Field(gt=0, description="total parameters, billions")
    active_params_b: float = Field(gt=0, description="parameters used per token (MoE: < total)")
    layers: int = Field(ge=1)
    hidden_size: int = Field(ge=1)
    attention_heads: int = Field(ge=1)
    kv_heads: int = Field(ge=1)
    head_dim: int = Field(ge=1)
    vocab_size: int = Field(ge=1)
    max_context: int = Field(ge=1)
    experts: int = Field(default=1, ge=1, description="routed experts per MoE layer (1: dense)")
    experts_per_token: int = Field(default=1, ge=1, description="routed experts each token goes to")
    shared_experts: int = Field(default=0, ge=0, description="experts every token goes to, per MoE layer")
    moe_layers: int | None = Field(
        default=None, ge=0, description="layers with experts (the others are dense); default: all of them"
    )
    expert_params_b: float | None = Field(
        default=None,
        gt=0,
        description="routed experts' parameters over all layers, billions (shared experts excluded); "
        "default: inferred from params_b - active_params_b",
    )
    attention: Literal["gqa", "mla"] = Field(
        default="gqa",
        description="gqa: K and V cached per KV head (MHA when kv_heads == attention_heads); "
        "mla: one compressed latent plus a RoPE key cached per token, shared by all heads",
    )
    kv_lora_rank: int | None = Field(default=None, ge=1, description="MLA: latent width cached per token and layer")
    qk_rope_head_dim: int | None = Field(default=None, ge=1, description="MLA: RoPE key width cached beside it")
    qk_nope_head_dim: int | None = Field(default=None, ge=1, description="MLA: per-head query/key width without RoPE")
    v_head_dim: int | None = Field(default=None, ge=1, description="MLA: per-head value width")
    q_lora_rank: int | None = Field(default=None, ge=1, description="MLA: query compression width (none: full)")
    sliding_window: int | None = Field(
        default=None, ge=1, description="tokens a sliding-window (or chunked local) layer attends to and caches"
    )
    full_attention_layers: int | None = Field(
        default=None, ge=0, description="with sliding_window: layers that attend the whole context (default 0)"
    )
    weights_format: Literal["bf16", "fp16", "fp8", "mxfp4"] | None = Field(
        default=None, description="how the published checkpoint stores its weights (serving never upcasts them)"
    )
    experts_format: Literal["bf16", "fp16", "fp8", "mxfp4"] | None = Field(
        default=None, description="how it stores the routed experts' weights, where that differs (gpt-oss: mxfp4)"
    )
    mtp_params_b: float | None = Field(
        default=None,
        gt=0,
        description="multi-token-prediction module, billions, not in params_b (loaded for MTP speculation only)",
    )
    source: Source
    notes: str = ""

    @model_validator(mode="after")
    def _check(self) -> LlmModel:
        if self.active_params_b > self.params_b:
            raise ValueError("active_params_b cannot exceed params_b")
        if self.attention_heads % self.kv_heads:
            raise ValueError("attention_heads must be a multiple of kv_heads")
        if self.attention == "mla" and (self.kv_lora_rank is None or self.qk_rope_head_dim is None):
            raise ValueError("MLA attention needs kv_lora_rank and qk_rope_head_dim (what each token caches)")
        if self.full_attention_layers is not None and (
            self.sliding_window is None or self.full_attention_layers > self.layers
        ):
            raise ValueError("full_attention_layers needs sliding_window and at most `layers` layers")
        self._check_experts()
        return self

    def _check_experts(self) -> None:
        if self.experts_per_token > self.experts:
            raise ValueError("experts_per_token cannot exceed experts")
        moe_fields = (self.shared_experts, self.moe_layers, self.expert_params_b, self.experts_format)
        if self.experts == 1 and any(moe_fields):
            raise ValueError("shared_experts, moe_layers, expert_params_b and experts_format need experts > 1")
        if self.moe_layers is not None and self.moe_layers > self.layers:
            raise ValueError("moe_layers cannot exceed layers")
        if self.expert_params_b is not None and self.expert_params_b >= self.params_b:
            raise ValueError("expert_params_b must be less than params_b (attention and embeddings are not experts)")


class GpusFile(Strict):
    schema_version: Literal[1] = 1
    gpus: list[Gpu]


class ModelsFile(Strict):
    schema_version: Literal[1] = 1
    models: list[LlmModel]


class Rental(Strict):
    gpu: str = Field(min_length=1)
    on_demand_usd_per_gpu_hour: float = Field(gt=0)
    reserved_usd_per_gpu_hour: float = Field(gt=0)
    source: Source


class CloudFile(Strict):
    schema_version: Literal[1] = 1
    rentals: list[Rental]
