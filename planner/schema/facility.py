"""servers.yaml's facility parts beside the chassis: the rack, liquid cooling, front-end and
management Ethernet, and shared storage; and the file itself."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from planner.schema.catalog import Price, ServerChassis, Source, Strict


class Rack(Strict):
    price: Price = Field(description="one rack with PDUs")
    source: Source


class LiquidCooling(Strict):
    """What direct liquid cooling adds for a liquid-cooled rack, per kW of its IT power."""

    price_usd_per_kw: Price = Field(description="capex per kW of liquid-cooled IT power (CDUs, piping, manifolds)")
    pue: float = Field(ge=1, le=5, description="facility PUE where liquid carries the heat away")
    pue_source: Source


class Frontend(Strict):
    """The front-end and management Ethernet every racked server gets."""

    ports_per_server: int = Field(ge=0, le=16)
    switch_ports: int = Field(ge=2)
    switch_price: Price
    switch_power_w: float = Field(ge=0)
    cable_price: Price = Field(description="per front-end port")
    mgmt_switch_ports: int = Field(ge=2)
    mgmt_switch_price: Price
    mgmt_switch_power_w: float = Field(ge=0)
    notes: str = ""


class Storage(Strict):
    """Shared storage for training jobs: checkpoints and datasets."""

    price_usd_per_tb: Price = Field(description="per usable TB, nodes included")
    power_w_per_tb: float = Field(ge=0)
    checkpoint_bytes_per_param: float = Field(gt=0)
    checkpoints_kept: int = Field(ge=1)
    dataset_bytes_per_token: float = Field(gt=0)
    ports_per_node: int = Field(ge=0)
    tb_per_node: float = Field(gt=0)
    source: Source


class ServersFile(Strict):
    schema_version: Literal[1] = 1
    rack: Rack
    liquid_cooling: LiquidCooling
    frontend: Frontend
    storage: Storage
    servers: list[ServerChassis]
