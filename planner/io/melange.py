"""Mélange inputs: read its solver config, turn it into a rent-only problem, or solve it directly.

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

The config carries no token counts: the README gives bucket edges only as an example
("1-25, 25-100, 100-250, ..."), and ``melange/profiling/benchmark-launcher.sh`` profiles
requests of exactly 25, 100, 250, 500, 1000 and 2000 tokens in and out. Bucket ``k`` is
therefore labelled with the ``k``-th of those lengths (the size its throughput was measured
at); past six buckets the ladder keeps doubling (4000, 8000, ...). The sizes are labels of a
generic service: the measured throughputs carry the physics.

`solve_direct` is Mélange's model as a small CP-SAT program (integer slices per bucket and
type instead of Mélange's 0/1 slice assignment, which removes the symmetry between equal
slices); `solve_brute_force` enumerates tiny instances to check it.
"""

from __future__ import annotations

import difflib
import itertools
import json
import math
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from planner.errors import InputError
from planner.io.yaml_io import read_input_text

MAX_FILE_BYTES = 20_000_000
SHARE_TOLERANCE = 1e-3  # as the problem schema: mix shares must sum to 1 within this
MAX_SLICE_FACTOR = 1000  # the problem schema's limit on mix.slices
MAX_RATE = 1e7  # requests/s, the problem schema's limit
MAX_COST_USD_PER_HOUR = 1e4  # the problem schema's limit on rent prices

# Request lengths Mélange's profiling launcher measures (melange/profiling/benchmark-launcher.sh:
# `for input_len in 25 100 250 500 1000 2000`, the same list for output_len), i.e. the upper
# edges of the README's example buckets 1-25, 25-100, 100-250, ...
MELANGE_PROFILED_TOKENS = (25, 100, 250, 500, 1000, 2000)

# Mélange GPU names -> planner catalog ids. Other names that are catalog ids map to themselves.
# - A100-80GB: Mélange rents it as Azure Standard_NC24ads_A100_v4 (melange/lib/util.py,
#   A100_80GB_INSTANCE), one A100 80GB PCIe; its $3.67/h is that instance's on-demand price.
#   "A100" is the same GPU in Mélange's older melange/main.py example (same $3.67/h).
# - A10G: AWS g5 (util.py, A10G_INSTANCE = g5.xlarge); the catalog has its own A10G entry.
# - H100: Mélange names no H100 instance; the 80 GB SXM part is assumed (map H100=H100-PCIe or
#   H100=H100-NVL with --gpu when your profile was taken on one of those).
DEFAULT_GPU_IDS: dict[str, str] = {
    "A10G": "A10G",
    "A100-80GB": "A100-PCIe-80GB",
    "A100": "A100-PCIe-80GB",
    "H100": "H100-SXM",
    "H100-80GB": "H100-SXM",
    "L4": "L4",
}

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
    """Read and check a Mélange JSON config; every problem is an InputError naming the file and key."""
    text = read_input_text(Path(path), "a Mélange JSON config", MAX_FILE_BYTES, encoding="utf-8-sig")
    return parse_config(loads_json(text, str(path)), str(path))


def loads_json(text: str, name: str = "<string>") -> Any:
    def no_constant(token: str) -> Any:
        raise _JsonValueError(f"{token} is not a number JSON allows")

    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                raise _JsonValueError(f"key {key!r} appears twice in one object")
            out[key] = value
        return out

    try:
        return json.loads(text, parse_constant=no_constant, object_pairs_hook=no_duplicates)
    except json.JSONDecodeError as exc:
        raise InputError(f"is not valid JSON: {exc.msg} (column {exc.colno})", file=name, line=exc.lineno) from None
    except _JsonValueError as exc:
        raise InputError(f"is not valid JSON: {exc}", file=name) from None
    except RecursionError:
        raise InputError("is not valid JSON: nested too deeply", file=name) from None


class _JsonValueError(ValueError):
    pass


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
    return value  # type: ignore[return-value]  # ints stay ints, so they are written back as written


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


# ---------------------------------------------------------------------------------- the conversion


def token_sizes(count: int, given: Sequence[int] | None, key: str) -> list[int]:
    """Representative token counts for ``count`` buckets: ``given``, else Mélange's profiled lengths."""
    if given is None:
        ladder = list(MELANGE_PROFILED_TOKENS)
        while len(ladder) < count:
            ladder.append(ladder[-1] * 2)
        return ladder[:count]
    sizes = list(given)
    if len(sizes) != count:
        raise InputError(f"gives {len(sizes)} sizes, the config has {count} buckets on that axis", key=key)
    if any(s < 1 for s in sizes) or sorted(set(sizes)) != sizes:
        raise InputError(f"sizes must be increasing positive token counts, got {sizes}", key=key)
    return sizes


def parse_sizes(text: str | None, key: str) -> list[int] | None:
    """``"100,1000"`` -> ``[100, 1000]``; None stays None."""
    if text is None:
        return None
    try:
        return [int(part) for part in text.split(",")]
    except ValueError:
        raise InputError(f"expected whole token counts separated by commas, got {text!r}", key=key) from None


def parse_gpu_map(items: Sequence[str]) -> dict[str, str]:
    """``["H100=H100-NVL"]`` -> ``{"H100": "H100-NVL"}``."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, gpu_id = item.partition("=")
        if not sep or not name.strip() or not gpu_id.strip():
            raise InputError(f"expected NAME=ID (a Mélange GPU name and a catalog id), got {item!r}", key="--gpu")
        out[name.strip()] = gpu_id.strip()
    return out


def resolve_gpu_ids(instance: MelangeInstance, overrides: Mapping[str, str], catalog: Any, file: str) -> dict[str, str]:
    """Mélange GPU name -> catalog id: ``overrides`` (from --gpu), the default map, or a catalog id."""
    names = [g.name for g in instance.gpus]
    lowered = {n.lower(): n for n in names}
    for name in overrides:
        if name.lower() not in lowered:
            raise InputError(
                f"--gpu {name}=...: {name!r} is not a GPU in the config (it has {', '.join(names)})", file=file
            )
    chosen = {lowered[k.lower()]: v for k, v in overrides.items()}
    defaults = {k.lower(): v for k, v in DEFAULT_GPU_IDS.items()}
    out: dict[str, str] = {}
    for name in names:
        wanted = chosen.get(name) or defaults.get(name.lower()) or catalog.find_gpu_id(name)
        if wanted is None:
            raise InputError(
                f"unknown GPU {name!r}: not a catalog id and not one of Mélange's names "
                f"({', '.join(DEFAULT_GPU_IDS)}); known catalog ids: {', '.join(catalog.gpus)}",
                file=file,
                key=f"gpu_info.{name}",
                hint=f"map it with --gpu {name}=ID",
            )
        gpu_id = catalog.find_gpu_id(wanted)
        if gpu_id is None:
            hint = difflib.get_close_matches(wanted, list(catalog.gpus), n=1, cutoff=0.5)
            raise InputError(
                f"{name}={wanted}: {wanted!r} is not a catalog GPU id",
                key="--gpu",
                hint=f"did you mean {hint[0]!r}? `planner catalog gpus` lists them"
                if hint
                else "see `planner catalog gpus`",
            )
        out[name] = gpu_id
    seen: dict[str, str] = {}
    for name, gpu_id in out.items():
        if gpu_id in seen:
            raise InputError(
                f"GPUs {seen[gpu_id]!r} and {name!r} both map to {gpu_id}",
                file=file,
                key=f"gpu_info.{name}",
                hint=f"map one of them elsewhere with --gpu {name}=ID",
            )
        seen[gpu_id] = name
    return out


def to_problem(
    instance: MelangeInstance,
    gpu_ids: Mapping[str, str],
    *,
    name: str,
    source: str = "",
    input_sizes: Sequence[int] | None = None,
    output_sizes: Sequence[int] | None = None,
) -> dict[str, Any]:
    """The rent-only planner problem (problem-file form) of a Mélange instance."""
    rows, cols = instance.shape
    ins = token_sizes(rows, input_sizes, "--input-sizes")
    outs = token_sizes(cols, output_sizes, "--output-sizes")
    buckets = [
        {
            "name": bucket_name(i, j),
            "input_tokens": ins[i],
            "output_tokens": outs[j],
            "share": instance.distribution[i][j],
        }
        for i, j in instance.buckets()
    ]
    measured = [
        {"gpu": gpu_ids[g.name], "bucket": bucket_name(i, j), "requests_per_s": g.tputs[i][j]}
        for g in instance.gpus
        for i, j in instance.buckets()
        if g.tputs[i][j] > 0
    ]
    catalog: dict[str, Any] = {"rent_usd_per_gpu_hour": {gpu_ids[g.name]: g.cost_usd_per_hour for g in instance.gpus}}
    stock = {gpu_ids[g.name]: g.max_count for g in instance.gpus if g.max_count is not None}
    if stock:
        catalog["stock"] = stock
    described = f" {source}" if source else ""
    return {
        "name": name,
        "description": (
            f"Imported from the Mélange config{described}: {len(instance.gpus)} GPU types rented by the hour, "
            f"{rows}x{cols} request-size buckets, slice factor {instance.slice_factor}."
        ),
        "horizon_years": 1,
        "finance": {"buy": False, "rent": "on_demand", "discount_rate": 0.0},
        "catalog": catalog,
        "inference": [
            {
                "name": "melange",
                "requests_per_s": instance.total_request_rate,
                "mix": {"slices": instance.slice_factor, "buckets": buckets},
                "measured": measured,
            }
        ],
    }


def problem_yaml(problem: Mapping[str, Any], header: Sequence[str] = ()) -> str:
    """The problem as YAML: one line per bucket and per measurement."""
    import yaml

    body = yaml.safe_dump(dict(problem), sort_keys=False, default_flow_style=None, allow_unicode=True, width=200)
    return "".join(f"# {line}\n" if line else "#\n" for line in header) + body


def problem_name(config_path: str | Path) -> str:
    stem = re.sub(r"[^A-Za-z0-9_.\-]+", "-", Path(config_path).stem).strip("-") or "config"
    return f"melange-{stem}"


# -------------------------------------------------------------------------------- solving directly


@dataclass(frozen=True)
class MelangeSolution:
    status: str  # optimal | feasible | infeasible | unknown
    cost_usd_per_hour: float | None
    counts: dict[str, int] = field(default_factory=dict)  # GPUs rented per Mélange type
    slices: dict[tuple[int, int, str], int] = field(default_factory=dict)  # (row, col, GPU name) -> slices
    seconds: float = 0.0
    exact: bool = True  # loads in exact integer units (else rounded up: never under-provisions)


def slice_loads(instance: MelangeInstance) -> dict[tuple[int, int, str], Fraction]:
    """GPUs of a type busy with one slice of a bucket: rate x share / slice_factor / tput, exactly.

    Values are taken as the decimals written in the config (``0.2`` is 1/5), so the example's
    ``0.2 x 30 / 2`` is exactly 3 GPUs, not 3.0000000000000004.
    """
    rate = _exact(instance.total_request_rate)
    loads = {}
    for i, j in instance.buckets():
        per_slice = rate * _exact(instance.distribution[i][j]) / instance.slice_factor
        for g in instance.gpus:
            if g.tputs[i][j] > 0:
                loads[i, j, g.name] = per_slice / _exact(g.tputs[i][j])
    return loads


def _exact(x: float) -> Fraction:
    return Fraction(repr(x)) if isinstance(x, float) else Fraction(x)


def _cost(instance: MelangeInstance, counts: Mapping[str, int]) -> float:
    return math.fsum(g.cost_usd_per_hour * counts.get(g.name, 0) for g in instance.gpus)


def solve_direct(
    instance: MelangeInstance,
    time_limit_s: float | None = None,
    *,
    workers: int = 1,
    scale: int = 1_000_000,
    exact_limit: int = 10**9,
    lb_tree_search: bool = True,
) -> MelangeSolution:
    """Mélange's allocation as a CP-SAT model; deterministic (one worker, or interleaved workers).

    Variables: ``count[g]`` GPUs rented per type; ``s[b, g]`` slices of bucket ``b`` served by
    type ``g``, summing to the slice factor per bucket. Per type, the load
    ``sum_b s[b, g] x slice_load[b, g] <= count[g]`` is written in integers: exactly (times the
    common denominator of that type's loads) when that denominator is at most ``exact_limit``,
    else with each load in units of ``1/scale`` GPU rounded up (never under-provisions; may
    rent one GPU more than needed when the exact load sits within ~1e-6 of an integer).
    Objective: hourly cost, in micro-dollars.

    The first solution found is usually optimal; proving it is the hard part. With one worker,
    ``lb_tree_search`` (CP-SAT's objective lower-bound tree search) proves 12x12 buckets at slice
    factor 16 in seconds where the default search runs out of a minute on 10x10 (see
    benchmarks/bench_melange.py); with more workers the interleaved portfolio includes it.
    """
    from ortools.sat.python import cp_model

    start = time.perf_counter()
    loads = slice_loads(instance)
    model = cp_model.CpModel()
    s_max = instance.slice_factor
    slices: dict[tuple[int, int, str], Any] = {}
    for (i, j, g), _ in sorted(loads.items()):
        slices[i, j, g] = model.new_int_var(0, s_max, f"s[{bucket_name(i, j)},{g}]")
    for i, j in instance.buckets():
        model.add(sum(v for (bi, bj, _), v in slices.items() if (bi, bj) == (i, j)) == s_max)
    counts = {}
    exact = True
    for g in instance.gpus:
        mine = {(i, j): load for (i, j, name), load in loads.items() if name == g.name}
        denominator = math.lcm(*(f.denominator for f in mine.values())) if mine else 1
        if denominator <= exact_limit:
            coeffs = {b: int(f * denominator) for b, f in mine.items()}
            unit = denominator
        else:
            exact = False
            coeffs = {b: math.ceil(f * scale) for b, f in mine.items()}
            unit = scale
        upper = -(-sum(coeffs.values()) * s_max // unit)  # every slice it can serve, on this type alone
        if g.max_count is not None:
            upper = min(upper, g.max_count)
        counts[g.name] = model.new_int_var(0, upper, f"count[{g.name}]")
        if coeffs:
            model.add(sum(c * slices[i, j, g.name] for (i, j), c in coeffs.items()) <= unit * counts[g.name])
    model.minimize(sum(round(g.cost_usd_per_hour * 1_000_000) * counts[g.name] for g in instance.gpus))

    solver = cp_model.CpSolver()
    solver.parameters.num_workers = workers
    solver.parameters.interleave_search = workers > 1
    solver.parameters.random_seed = 0
    solver.parameters.optimize_with_lb_tree_search = lb_tree_search and workers == 1
    if time_limit_s is not None:
        solver.parameters.max_time_in_seconds = time_limit_s
    status = solver.solve(model)
    seconds = time.perf_counter() - start
    name = {cp_model.OPTIMAL: "optimal", cp_model.FEASIBLE: "feasible", cp_model.INFEASIBLE: "infeasible"}.get(
        status, "unknown"
    )
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return MelangeSolution(name, None, seconds=seconds, exact=exact)
    chosen = {g: int(solver.value(v)) for g, v in counts.items()}
    assigned = {k: int(solver.value(v)) for k, v in slices.items() if solver.value(v)}
    return MelangeSolution(name, _cost(instance, chosen), chosen, assigned, seconds, exact)


def solve_brute_force(instance: MelangeInstance, max_assignments: int = 2_000_000) -> MelangeSolution:
    """Every way to split every bucket's slices among the types that serve it; exact arithmetic.

    Each split fixes the load per type, so the cheapest counts are the loads rounded up. For
    tiny instances only: refuses more than ``max_assignments`` combinations.
    """
    start = time.perf_counter()
    loads = slice_loads(instance)
    s_max = instance.slice_factor
    per_bucket = []
    for i, j in instance.buckets():
        names = [g.name for g in instance.gpus if (i, j, g.name) in loads]
        splits = [
            dict(zip(names, parts, strict=True))
            for parts in itertools.product(range(s_max + 1), repeat=len(names))
            if sum(parts) == s_max
        ]
        per_bucket.append(((i, j), splits))
    total = math.prod(len(splits) for _, splits in per_bucket)
    if total > max_assignments:
        raise ValueError(f"{total:,} assignments: too many for brute force")
    limits = {g.name: g.max_count for g in instance.gpus}
    best: tuple[float, dict[str, int], dict[tuple[int, int, str], int]] | None = None
    for choice in itertools.product(*(splits for _, splits in per_bucket)):
        load: dict[str, Fraction] = {g.name: Fraction(0) for g in instance.gpus}
        for ((i, j), _), split in zip(per_bucket, choice, strict=True):
            for g, k in split.items():
                load[g] += k * loads[i, j, g]
        counts = {g: math.ceil(x) for g, x in load.items()}
        if any(limits[g] is not None and counts[g] > limits[g] for g in counts):  # type: ignore[operator]
            continue
        cost = _cost(instance, counts)
        if best is None or cost < best[0] - 1e-9:
            assigned = {
                (i, j, g): k
                for ((i, j), _), split in zip(per_bucket, choice, strict=True)
                for g, k in split.items()
                if k
            }
            best = (cost, counts, assigned)
    seconds = time.perf_counter() - start
    if best is None:
        return MelangeSolution("infeasible", None, seconds=seconds)
    return MelangeSolution("optimal", best[0], best[1], best[2], seconds)


# ---------------------------------------------------------------------------------------- the file


@dataclass(frozen=True)
class Imported:
    instance: MelangeInstance
    gpu_ids: dict[str, str]
    problem: dict[str, Any]
    text: str


def import_config(
    config: str | Path,
    *,
    gpu_map: Mapping[str, str] | None = None,
    input_sizes: Sequence[int] | None = None,
    output_sizes: Sequence[int] | None = None,
    name: str | None = None,
) -> Imported:
    """Read a Mélange config and build the planner problem (not yet written)."""
    from planner.catalog import load_catalog

    instance = read_config(config)
    rows, cols = instance.shape
    ins = token_sizes(rows, input_sizes, "--input-sizes")
    outs = token_sizes(cols, output_sizes, "--output-sizes")
    gpu_ids = resolve_gpu_ids(instance, gpu_map or {}, load_catalog(), str(config))
    problem = to_problem(
        instance,
        gpu_ids,
        name=name or problem_name(config),
        source=Path(config).name,
        input_sizes=ins,
        output_sizes=outs,
    )

    def origin(given: Sequence[int] | None) -> str:
        return "given" if given else "Mélange's profiled lengths"

    header = [
        f"Imported by `planner import-melange` from {Path(config).name}.",
        "Rent only (finance.buy: false), one year at Mélange's hourly prices: TCO / 8760 h is the cost per hour.",
        "Bucket in<i>-out<j> is Mélange's workload_distribution[i][j]. Its token sizes label a generic service:",
        f"inputs {ins} ({origin(input_sizes)}), outputs {outs} ({origin(output_sizes)}).",
        "The measured throughputs (Mélange's tputs: requests/s per GPU at its SLO, one GPU per replica)",
        "carry the physics. GPU names: " + ", ".join(f"{k} -> {v}" for k, v in gpu_ids.items()) + ".",
    ]
    return Imported(instance, gpu_ids, problem, problem_yaml(problem, header))
