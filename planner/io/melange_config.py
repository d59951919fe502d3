"""Mélange's solver config: read it, check it, and hold it typed (`MelangeInstance`).

Mélange (Griggs et al. 2024, "Mélange: Cost Efficient LLM Serving by Exploiting GPU
Heterogeneity", github.com/tyler-griggs/melange-release) chooses how many GPUs of each
type to rent for one LLM service. Its solver reads a JSON config (``melange/config/
example.json``, loaded by ``melange/lib/runner.py``)::

    {"gpu_info": {"A10G": {"cost": 1.01, "tputs": [[2, 1], [5, 2]]}, ...},
     "workload_distribution": [[0.2, 0.1], [0.5, 0.2]],
     "total_request_rate": 30,
     "slice_factor": 1}

- ``workload_distribution``: share of requests per (input-length row, output-length column)
  bucket; ``total_request_rate`` requests/s in all;
- ``gpu_info[g].cost``: USD per hour to rent one GPU; ``tputs[i][j]``: the most requests/s one
  GPU sustains on requests of bucket (i, j) at the service's SLO (0: it cannot serve them);
  ``max_count`` (optional, later versions): at most that many GPUs of the type;
- ``slice_factor``: each bucket is cut into this many equal slices, each served by one type.

The README documents an older ``overall_rate`` key and a list form of ``gpu_info``
(``[{"name": ..., "cost": ..., "tputs": ...}]``); both are accepted.

`planner.io.melange` turns an instance into a planner problem; `planner.optimize.melange_direct`
solves Mélange's own model on it, as the reference for the planner's answer.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planner.errors import InputError
from planner.io.files import loads_json as loads_json  # re-exported: JSON is read as every input is
from planner.io.files import read_input_text

MAX_FILE_BYTES = 20_000_000
SHARE_TOLERANCE = 1e-3  # as the problem schema: mix shares must sum to 1 within this
MAX_SLICE_FACTOR = 1000  # the problem schema's limit on mix.slices
MAX_RATE = 1e7  # requests/s, the problem schema's limit
MAX_COST_USD_PER_HOUR = 1e4  # the problem schema's limit on rent prices

_TOP_KEYS = ("gpu_info", "workload_distribution", "total_request_rate", "slice_factor")
_GPU_KEYS = ("cost", "tputs", "max_count")


# ------------------------------------------------------------------------------------ the instance


@dataclass(frozen=True)
class MelangeGpu:
    name: str
    cost_usd_per_hour: float
    tputs: tuple[tuple[float, ...], ...]  # requests/s per GPU, [input bucket][output bucket]; 0: cannot serve
    max_count: int | None = None


@dataclass(frozen=True)
class MelangeInstance:
    gpus: tuple[MelangeGpu, ...]
    distribution: tuple[tuple[float, ...], ...]  # share of requests, [input bucket][output bucket]
    total_request_rate: float  # requests/s
    slice_factor: int = 1

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.distribution), len(self.distribution[0])

    def buckets(self) -> list[tuple[int, int]]:
        """(input row, output column) of every bucket with requests, row-major."""
        rows, cols = self.shape
        return [(i, j) for i in range(rows) for j in range(cols) if self.distribution[i][j] > 0]


def bucket_name(i: int, j: int) -> str:
    return f"in{i}-out{j}"


# --------------------------------------------------------------------------------- reading a config


def read_config(path: str | Path) -> MelangeInstance:
    """Read and check a Mélange JSON config (a regular file, bounded, UTF-8; JSON without NaN, huge
    numbers or deep nesting); every problem is an InputError naming the file and key."""
    text = read_input_text(Path(path), "a Mélange JSON config", MAX_FILE_BYTES, encoding="utf-8-sig")
    return parse_config(loads_json(text, str(path)), str(path))


def parse_config(data: Any, name: str = "<string>") -> MelangeInstance:
    """Check a loaded Mélange config (the solver's inputs) and return it typed."""

    def fail(key: str, message: str, hint: str | None = None) -> InputError:
        return InputError(message, file=name, key=key, hint=hint)

    if not isinstance(data, dict):
        raise InputError(f"expected a JSON object with keys {', '.join(_TOP_KEYS)}, got {_kind(data)}", file=name)
    data = dict(data)
    if "overall_rate" in data:  # the README's older name for total_request_rate
        if "total_request_rate" in data:
            raise fail("overall_rate", "give total_request_rate or overall_rate (its older name), not both")
        data["total_request_rate"] = data.pop("overall_rate")
    for key in data:
        if key not in _TOP_KEYS:
            raise fail(key, "unknown key", _did_you_mean(key, _TOP_KEYS) or f"expected {', '.join(_TOP_KEYS)}")
    for key in _TOP_KEYS[:3]:
        if key not in data:
            raise fail(key, "missing (a Mélange config needs gpu_info, workload_distribution and total_request_rate)")

    distribution = _matrix(data["workload_distribution"], "workload_distribution", fail)
    rows, cols = len(distribution), len(distribution[0])
    total = math.fsum(v for row in distribution for v in row)
    if abs(total - 1) > SHARE_TOLERANCE:
        raise fail(
            "workload_distribution",
            f"shares sum to {total:.6g}, expected 1 (within {SHARE_TOLERANCE:g})",
            "each cell is the share of requests in that bucket",
        )
    if any(v > 1 for row in distribution for v in row):
        raise fail("workload_distribution", "a share is above 1")

    rate = _number(data["total_request_rate"], "total_request_rate", fail)
    if not (0 < rate <= MAX_RATE):
        raise fail("total_request_rate", f"must be a rate in (0, {MAX_RATE:g}] requests/s, got {rate:g}")
    slice_factor = data.get("slice_factor", 1)
    if isinstance(slice_factor, bool) or not isinstance(slice_factor, int):
        raise fail("slice_factor", f"must be a whole number, got {_shown(slice_factor)}")
    if not (1 <= slice_factor <= MAX_SLICE_FACTOR):
        raise fail("slice_factor", f"must be between 1 and {MAX_SLICE_FACTOR}, got {slice_factor}")

    gpus = _gpus(data["gpu_info"], (rows, cols), fail)
    for i, j in ((i, j) for i in range(rows) for j in range(cols)):
        if distribution[i][j] > 0 and not any(g.tputs[i][j] > 0 for g in gpus):
            raise fail(
                f"workload_distribution[{i}][{j}]",
                f"bucket {bucket_name(i, j)} has share {distribution[i][j]:g} but no GPU serves it (every tputs is 0)",
            )
    return MelangeInstance(gpus, distribution, rate, slice_factor)


def _gpus(value: Any, shape: tuple[int, int], fail: Any) -> tuple[MelangeGpu, ...]:
    if isinstance(value, list):  # the README's list form: [{"name": ..., "cost": ..., "tputs": ...}]
        entries: dict[str, Any] = {}
        for k, item in enumerate(value):
            if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
                raise fail(f"gpu_info[{k}]", "expected an object with a name, cost and tputs")
            if item["name"] in entries:
                raise fail(f"gpu_info[{k}].name", f"GPU {item['name']!r} is listed twice")
            entries[item["name"]] = {key: v for key, v in item.items() if key != "name"}
        value = entries
    if not isinstance(value, dict) or not value:
        raise fail("gpu_info", f"expected an object of GPU types (name: {{cost, tputs}}), got {_kind(value)}")
    gpus = []
    rows, cols = shape
    for gpu_name, info in value.items():
        where = f"gpu_info.{gpu_name}"
        if not isinstance(info, dict):
            raise fail(where, f"expected an object with cost and tputs, got {_kind(info)}")
        for key in info:
            if key not in _GPU_KEYS:
                raise fail(f"{where}.{key}", "unknown key", _did_you_mean(key, _GPU_KEYS) or "expected cost, tputs")
        for key in ("cost", "tputs"):
            if key not in info:
                raise fail(f"{where}.{key}", "missing")
        cost = _number(info["cost"], f"{where}.cost", fail)
        if not (0 < cost <= MAX_COST_USD_PER_HOUR):
            raise fail(f"{where}.cost", f"must be an hourly price in (0, {MAX_COST_USD_PER_HOUR:g}] USD, got {cost:g}")
        tputs = _matrix(info["tputs"], f"{where}.tputs", fail)
        if (len(tputs), len(tputs[0])) != shape:
            raise fail(
                f"{where}.tputs",
                f"is {len(tputs)}x{len(tputs[0])}, expected {rows}x{cols} (the shape of workload_distribution)",
            )
        if any(v > MAX_RATE for row in tputs for v in row):
            raise fail(f"{where}.tputs", f"a throughput is above {MAX_RATE:g} requests/s")
        max_count = info.get("max_count")
        if max_count is not None and (isinstance(max_count, bool) or not isinstance(max_count, int) or max_count < 0):
            raise fail(f"{where}.max_count", f"must be a whole number >= 0, got {_shown(max_count)}")
        gpus.append(MelangeGpu(gpu_name, cost, tputs, max_count))
    return tuple(gpus)


def _matrix(value: Any, key: str, fail: Any) -> tuple[tuple[float, ...], ...]:
    """A non-empty rectangular matrix of numbers >= 0."""
    if not isinstance(value, list) or not value or not all(isinstance(r, list) for r in value):
        raise fail(key, f"expected a matrix (a list of rows of numbers), got {_shown(value)}")
    width = len(value[0])
    if width == 0:
        raise fail(key, "rows are empty")
    rows = []
    for i, row in enumerate(value):
        if len(row) != width:
            raise fail(f"{key}[{i}]", f"has {len(row)} values, row 0 has {width} (rows must be equally long)")
        rows.append(tuple(_number(v, f"{key}[{i}][{j}]", fail) for j, v in enumerate(row)))
        if any(v < 0 for v in rows[-1]):
            raise fail(f"{key}[{i}]", "values must be >= 0")
    return tuple(rows)


def _number(value: Any, key: str, fail: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise fail(key, f"expected a number, got {_shown(value)}")
    return value  # ints stay ints, so they are written back as written


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "true/false", type(None): "null"}.get(
        type(value), "a number"
    )


def _shown(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _did_you_mean(key: str, choices: Sequence[str]) -> str | None:
    close = difflib.get_close_matches(key, list(choices), n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}?" if close else None
