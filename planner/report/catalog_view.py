"""`planner catalog`: what the planner knows, with sources and dates."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel
from rich.console import Console
from rich.table import Table

from planner.catalog import load_catalog, suggest
from planner.errors import InputError
from planner.report.text import plain
from planner.schema.catalog import Gpu, LlmModel, Price, ServerChassis
from planner.schema.fabric import Fabric

TABLES = ("gpus", "servers", "fabrics", "models")


def show_catalog(table: str, as_json: bool, console: Console) -> None:
    name = table.lower()
    if name not in TABLES:
        raise InputError(
            f"unknown catalog {table!r}", hint=suggest(table, list(TABLES)) or f"one of {', '.join(TABLES)}"
        )
    catalog = load_catalog()
    tables: dict[str, Mapping[str, BaseModel]] = {
        "gpus": catalog.gpus,
        "servers": catalog.servers,
        "fabrics": catalog.fabrics,
        "models": catalog.models,
    }
    items = tables[name]
    if as_json:
        sys.stdout.write(json.dumps([v.model_dump(mode="json") for v in items.values()], indent=2) + "\n")
        return
    columns, cells = VIEWS[name]
    t = Table(title=f"{name} ({len(items)})", title_justify="left")
    for col in columns:
        t.add_column(col)
    for item in items.values():
        t.add_row(*map(plain, cells(item)))
    console.print(t)


def _sourced(item: Any) -> str:
    return f"{item.source.title} ({item.source.date})"


def _gpu_cells(g: Gpu) -> list[str]:
    tf = g.tflops_dense
    return [
        g.id,
        f"{g.memory_gb:g}",
        f"{g.memory_bandwidth_gb_per_s:,.0f}",
        f"{tf.get('bf16', tf.get('fp16', 0)):,.0f}",
        _opt(tf.get("fp8")),
        _opt(tf.get("fp4")),
        f"{g.tdp_w:,.0f}",
        f"{g.price.usd:,.0f}{' (est.)' if g.price.estimate else ''}",
        _sourced(g),
    ]


def _server_cells(s: ServerChassis) -> list[str]:
    return [
        s.id,
        ", ".join(s.gpus),
        str(s.gpus_per_server),
        s.gpu_link,
        str(s.rack_units),
        f"{s.base_power_w:,.0f}",
        f"{s.base_price.usd:,.0f} (est.)",
        str(s.scaleout_nics),
        _sourced(s),
    ]


def _fabric_cells(f: Fabric) -> list[str]:
    return [
        f.id,
        f.kind,
        f.topology if f.kind != "none" else "",
        f"{f.link_gbit_per_s:g}",
        _price(f.nic_price),
        str(f.switch_radix),
        _price(f.switch_price),
        _price(f.cable_price),
        f"{f.training_scaling:g}" + (f" x {f.topology_scaling:g} beyond one hop" if f.topology_scaling != 1 else ""),
        _sourced(f),
    ]


def _model_cells(m: LlmModel) -> list[str]:
    return [
        m.id,
        f"{m.params_b:g}",
        f"{m.active_params_b:g}",
        str(m.layers),
        str(m.hidden_size),
        str(m.attention_heads),
        str(m.kv_heads),
        str(m.head_dim),
        _sourced(m),
    ]


# Per table: its columns, and one row's cells.
VIEWS: dict[str, tuple[tuple[str, ...], Callable[[Any], list[str]]]] = {
    "gpus": (
        ("id", "memory GB", "GB/s", "bf16/fp16 TF", "fp8 TF", "fp4 TF", "TDP W", "price USD", "source"),
        _gpu_cells,
    ),
    "servers": (("id", "GPUs", "per server", "link", "U", "base W", "base USD", "NICs", "source"), _server_cells),
    "fabrics": (
        (
            "id",
            "kind",
            "topology",
            "Gbit/s",
            "NIC USD",
            "switch ports",
            "switch USD",
            "link USD",
            "train scaling",
            "source",
        ),
        _fabric_cells,
    ),
    "models": (
        ("id", "params B", "active B", "layers", "hidden", "heads", "KV heads", "head dim", "source"),
        _model_cells,
    ),
}


def _opt(x: float | None) -> str:
    return "-" if x is None else f"{x:,.0f}"


def _price(p: Price | None) -> str:
    return "-" if p is None else f"{p.usd:,.0f}"
