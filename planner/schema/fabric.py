"""fabrics.yaml: the scale-out fabrics between servers and the topologies each can be wired in.

A fabric entry in the file is a kind of network (InfiniBand NDR, RoCE 400G, ...): its NIC,
switch and cable. A topology is a way to wire it (non-blocking fat tree, 2:1 oversubscribed,
rail-optimised). The catalog loader (``planner.fabric.expand``) makes one ``Fabric`` per
scale-out entry and topology, so a plan chooses a topology by choosing a fabric id.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from planner.schema.catalog import Price, Source, Strict

TopologyId = Literal["fat-tree", "oversubscribed-2to1", "rail-optimised"]
TOPOLOGIES: tuple[TopologyId, ...] = ("fat-tree", "oversubscribed-2to1", "rail-optimised")
DEFAULT_TOPOLOGY: TopologyId = "fat-tree"


class Fabric(Strict):
    """A scale-out network between servers, wired in one topology (or ``none`` for a single server)."""

    id: str = Field(min_length=1)
    name: str
    kind: Literal["none", "infiniband", "roce", "ethernet"]
    link_gbit_per_s: float = Field(ge=0)
    latency_us: float = Field(ge=0)
    nic_price: Price | None = None
    nic_power_w: float = Field(default=0, ge=0)
    switch_radix: int = Field(default=0, ge=0, description="ports at link speed per switch")
    switch_price: Price | None = None
    switch_power_w: float = Field(default=0, ge=0)
    switch_rack_units: int = Field(default=0, ge=0)
    cable_price: Price | None = Field(default=None, description="per link, optics included")
    training_scaling: float = Field(
        gt=0,
        le=1,
        description="assumption: share of per-GPU training throughput kept when a job spans servers "
        "(on a non-blocking fat tree)",
    )
    source: Source
    notes: str = ""
    topology: TopologyId = Field(
        default=DEFAULT_TOPOLOGY,
        description="how leaves and spines are wired (set by the catalog loader from the topologies table)",
    )
    topology_scaling: float = Field(
        default=1.0,
        gt=0,
        le=2,
        description="assumption: multiplies training_scaling for a job whose NIC ports outgrow one switch "
        "hop (planner.fabric.one_hop_ports; the share stays at most 1)",
    )
    topology_name: str = Field(default="", description="the topology in words (from the topologies table)")
    topology_source: Source | None = Field(default=None, description="where topology_scaling comes from")
    base_id: str = Field(default="", description="the fabrics.yaml entry this one is wired from")

    @model_validator(mode="after")
    def _check(self) -> Fabric:
        if self.kind != "none":
            missing = [k for k in ("nic_price", "switch_price", "cable_price") if getattr(self, k) is None]
            if missing or self.switch_radix < 2 or self.link_gbit_per_s <= 0:
                raise ValueError(
                    f"fabric {self.id}: a scale-out fabric needs nic_price, switch_price, "
                    f"cable_price, switch_radix >= 2 and link_gbit_per_s > 0 (missing: {missing})"
                )
            if self.topology == "oversubscribed-2to1" and self.switch_radix < 3:
                raise ValueError(f"fabric {self.id}: a 2:1 leaf needs a radix of at least 3")
        elif self.topology != DEFAULT_TOPOLOGY:
            raise ValueError(f"fabric {self.id}: a fabric of kind none has no topology")
        return self


class Topology(Strict):
    """One way to wire every scale-out fabric (``planner.fabric`` counts its switches and cables)."""

    id: TopologyId
    name: str = Field(min_length=1)
    id_suffix: str = Field(description="appended to each fabric's id (ib-ndr + -2to1); '' for the fat tree")
    training_scaling_factor: float = Field(
        gt=0,
        le=2,
        description="assumption: multiplies a fabric's training_scaling for a job whose NIC ports outgrow "
        "one switch hop (1 for the fat tree, by definition)",
    )
    source: Source
    notes: str = ""


class FabricsFile(Strict):
    schema_version: Literal[1] = 1
    topologies: list[Topology] = Field(min_length=1)
    fabrics: list[Fabric]

    @model_validator(mode="after")
    def _check(self) -> FabricsFile:
        ids = [t.id for t in self.topologies]
        suffixes = [t.id_suffix for t in self.topologies]
        if len(set(ids)) != len(ids) or len(set(suffixes)) != len(suffixes):
            raise ValueError("topologies: each id and id_suffix once")
        fat = [t for t in self.topologies if t.id == DEFAULT_TOPOLOGY]
        if not fat or fat[0].id_suffix != "" or fat[0].training_scaling_factor != 1.0:
            raise ValueError("topologies: the fat tree is the reference: id_suffix '' and training_scaling_factor 1")
        return self
