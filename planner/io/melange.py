"""Mélange configs into planner problems: `planner import-melange`.

The config (read and checked by `planner.io.melange_config`) becomes a rent-only problem: one
inference service whose request mix is Mélange's buckets, with Mélange's measured throughputs
per GPU and bucket, at its hourly prices, for one year.

The config carries no token counts: the README gives bucket edges only as an example
("1-25, 25-100, 100-250, ..."), and ``melange/profiling/benchmark-launcher.sh`` profiles
requests of exactly 25, 100, 250, 500, 1000 and 2000 tokens in and out. Bucket ``k`` is
therefore labelled with the ``k``-th of those lengths (the size its throughput was measured
at); past six buckets the ladder keeps doubling (4000, 8000, ...). The sizes are labels of a
generic service: the measured throughputs carry the physics.

Mélange's own model, solved directly as the reference for the planner's answer, is in
`planner.optimize.melange_direct`.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planner.errors import InputError
from planner.io.melange_config import MelangeInstance, bucket_name, read_config

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
        # the GPUs a Mélange config names are the user's choice: end-of-life or not, any class
        "policy": {"allow": ["end-of-life", "announced", "workstation", "consumer", "edge"]},
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
    """The problem as YAML: one line per bucket and per measurement.

    Values go through ``yaml.safe_dump``, which quotes what needs it; each header line becomes
    one comment line, its line breaks and control characters escaped (a file name holding a
    newline cannot end the comment and inject keys).
    """
    import yaml

    from planner.report.text import one_line

    body = yaml.safe_dump(dict(problem), sort_keys=False, default_flow_style=None, allow_unicode=True, width=200)
    return "".join(f"# {one_line(line)}\n" if line else "#\n" for line in header) + body


def problem_name(config_path: str | Path) -> str:
    stem = re.sub(r"[^A-Za-z0-9_.\-]+", "-", Path(config_path).stem).strip("-") or "config"
    return f"melange-{stem}"


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
