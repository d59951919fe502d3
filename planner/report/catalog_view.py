"""`planner catalog`: what the planner knows, with sources and dates."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping

from pydantic import BaseModel
from rich.console import Console
from rich.table import Table

from planner.catalog import load_catalog, suggest
from planner.errors import InputError
from planner.schema.catalog import Price

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
    t = Table(title=f"{name} ({len(items)})", title_justify="left")
    if name == "gpus":
        for col in ("id", "memory GB", "GB/s", "bf16/fp16 TF", "fp8 TF", "fp4 TF", "TDP W", "price USD", "source"):
            t.add_column(col)
        for g in catalog.gpus.values():
            tf = g.tflops_dense
            t.add_row(
                g.id,
                f"{g.memory_gb:g}",
                f"{g.memory_bandwidth_gb_per_s:,.0f}",
                f"{tf.get('bf16', tf.get('fp16', 0)):,.0f}",
                _opt(tf.get("fp8")),
                _opt(tf.get("fp4")),
                f"{g.tdp_w:,.0f}",
                f"{g.price.usd:,.0f}{' (est.)' if g.price.estimate else ''}",
                f"{g.source.title} ({g.source.date})",
            )
    elif name == "servers":
        for col in ("id", "GPUs", "per server", "link", "U", "base W", "base USD", "NICs", "source"):
            t.add_column(col)
        for s in catalog.servers.values():
            t.add_row(
                s.id,
                ", ".join(s.gpus),
                str(s.gpus_per_server),
                s.gpu_link,
                str(s.rack_units),
                f"{s.base_power_w:,.0f}",
                f"{s.base_price.usd:,.0f} (est.)",
                str(s.scaleout_nics),
                f"{s.source.title} ({s.source.date})",
            )
    elif name == "fabrics":
        for col in (
            "id",
            "kind",
            "Gbit/s",
            "NIC USD",
            "switch ports",
            "switch USD",
            "link USD",
            "train scaling",
            "source",
        ):
            t.add_column(col)
        for f in catalog.fabrics.values():
            t.add_row(
                f.id,
                f.kind,
                f"{f.link_gbit_per_s:g}",
                _price(f.nic_price),
                str(f.switch_radix),
                _price(f.switch_price),
                _price(f.cable_price),
                f"{f.training_scaling:g}",
                f"{f.source.title} ({f.source.date})",
            )
    else:
        for col in ("id", "params B", "active B", "layers", "hidden", "heads", "KV heads", "head dim", "source"):
            t.add_column(col)
        for m in catalog.models.values():
            t.add_row(
                m.id,
                f"{m.params_b:g}",
                f"{m.active_params_b:g}",
                str(m.layers),
                str(m.hidden_size),
                str(m.attention_heads),
                str(m.kv_heads),
                str(m.head_dim),
                f"{m.source.title} ({m.source.date})",
            )
    console.print(t)


def _opt(x: float | None) -> str:
    return "-" if x is None else f"{x:,.0f}"


def _price(p: Price | None) -> str:
    return "-" if p is None else f"{p.usd:,.0f}"
