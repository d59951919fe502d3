"""Generate a large, feasible planning problem, deterministically from a seed.

    python benchmarks/generate.py [--seed 7] [--services 40] [--jobs 15] [-o benchmarks/large.yaml]

The problem has 25 purchasable GPU types (the catalog's 28 minus the rack-scale
and edge parts), 40 inference services over the catalog's models (varied
rates, prompt and output lengths, latency targets, precisions, spare replicas)
and 15 training jobs (pretraining, full fine-tunes, LoRA and QLoRA; some in
`after` chains, some with release days). Budget, power and racks are set but
loose: the benchmark measures the optimiser, not a diagnosis.

Every workload is checked against the planner's own option enumeration: a
service no GPU can serve gets looser latency targets, a job no GPU can finish
gets a later deadline, and an `after` link that could not be met even with the
fastest options moves the successor's release day to the predecessor's
deadline. The adjustments are deterministic, so a seed always gives the same file.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path
from typing import Any

import yaml

# Rack-scale and edge parts: not what a benchmark data centre buys.
EXCLUDE_PREFERENCE = ["GB200", "Jetson-AGX-Orin", "Ascend-310P"]
TARGET_GPU_TYPES = 25

# Serving mix: (model, weight, (min rps, max rps)). Small models carry most traffic.
SERVED = [
    ("llama-3.1-8b", 6, (5, 300)),
    ("mistral-7b", 3, (5, 200)),
    ("qwen2.5-7b", 3, (5, 200)),
    ("llama-2-7b", 1, (2, 60)),
    ("gpt-j-6b", 1, (2, 40)),
    ("llama-2-13b", 2, (2, 80)),
    ("mixtral-8x7b", 3, (2, 60)),
    ("llama-3.1-70b", 5, (1, 60)),
    ("qwen2.5-72b", 2, (1, 30)),
    ("llama-2-70b", 1, (1, 20)),
    ("llama-3.1-405b", 1, (0.5, 4)),
]
PRECISION_SETS = [
    ["bf16"],
    ["fp8"],
    ["bf16", "fp8"],
    ["fp8", "int4"],
    ["bf16", "fp8", "int8", "int4"],
    ["int8", "int4"],
]
PROFILES = [  # (input, output, ttft_ms, tpot_ms): chat, RAG, summarise, code, batch
    (800, 250, 500, 40),
    (6000, 300, 1500, 50),
    (3000, 500, 3000, 80),
    (1500, 150, 400, 30),
    (2000, 800, 10000, 150),
]

# Training mix: (model, method, tokens range, window days range).
TRAINED: list[tuple[Any, str, tuple[float, float], tuple[int, int]]] = [
    ({"params_b": 1.3}, "full", (5e10, 3e11), (10, 40)),
    ({"params_b": 3.0}, "full", (1e11, 6e11), (20, 60)),
    ("llama-3.1-8b", "full", (2e11, 1e12), (30, 90)),
    ("llama-3.1-8b", "full", (1e9, 2e10), (5, 20)),
    ("mistral-7b", "lora", (1e8, 2e9), (3, 14)),
    ("qwen2.5-7b", "qlora", (5e7, 5e8), (2, 10)),
    ("llama-2-13b", "full", (5e9, 5e10), (10, 30)),
    ("llama-3.1-70b", "lora", (1e8, 1e9), (5, 20)),
    ("llama-3.1-70b", "qlora", (5e7, 3e8), (5, 15)),
    ("llama-3.1-70b", "full", (5e10, 3e11), (30, 90)),
    ("mixtral-8x7b", "full", (2e10, 1e11), (20, 60)),
    ("qwen2.5-72b", "lora", (1e8, 5e8), (5, 20)),
]


def _log_uniform(rng: random.Random, lo: float, hi: float) -> float:
    import math

    return math.exp(rng.uniform(math.log(lo), math.log(hi)))


def _sig(x: float, digits: int = 2) -> float:
    return float(f"{x:.{digits}g}")


def _services(rng: random.Random, n: int) -> list[dict[str, Any]]:
    out = []
    weights = [w for _, w, _ in SERVED]
    for i in range(n):
        model, _, (lo, hi) = rng.choices(SERVED, weights)[0]
        inp, outp, ttft, tpot = rng.choice(PROFILES)
        svc: dict[str, Any] = {
            "name": f"svc-{i:02d}-{model}",
            "model": model,
            "precisions": list(rng.choice(PRECISION_SETS)),
            "requests_per_s": _sig(_log_uniform(rng, lo, hi)),
            "input_tokens": int(_sig(inp * rng.uniform(0.5, 1.5))),
            "output_tokens": int(_sig(outp * rng.uniform(0.5, 1.5))),
            "ttft_ms": _sig(ttft * rng.uniform(0.8, 1.6)),
            "tpot_ms": _sig(tpot * rng.uniform(0.8, 1.6)),
            "spare_replicas": rng.choice([0, 0, 1, 1, 2]),
        }
        out.append(svc)
    return out


def _jobs(rng: random.Random, n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(n):
        model, method, (tlo, thi), (wlo, whi) = rng.choice(TRAINED)
        label = model if isinstance(model, str) else f"dense-{model['params_b']:g}b"
        job: dict[str, Any] = {
            "name": f"job-{i:02d}-{method}-{label}",
            "model": dict(model) if isinstance(model, dict) else model,
            "method": method,
            "tokens": _sig(_log_uniform(rng, tlo, thi)),
        }
        window = rng.randint(wlo, whi)
        release = rng.choice([0, 0, 0, rng.randint(5, 60)])
        # A third of the jobs continue an earlier one: after: [that job].
        if out and rng.random() < 0.35:
            pred = rng.choice(out)
            job["after"] = [pred["name"]]
            release = max(release, int(pred["deadline_days"] * rng.choice([0.0, 0.5, 0.8])))
        if release:
            job["release_day"] = release
        job["deadline_days"] = release + window
        out.append(job)
    return out


def _catalog_exclusions() -> list[str]:
    from planner.catalog import load_catalog

    gpus = list(load_catalog().gpus)
    drop = [g for g in EXCLUDE_PREFERENCE if g in gpus]
    extra = len(gpus) - len(drop) - TARGET_GPU_TYPES
    if extra > 0:  # a larger catalog: drop the last entries too
        drop += [g for g in reversed(gpus) if g not in drop][:extra]
    return drop[: max(0, len(gpus) - TARGET_GPU_TYPES)]


def generate(seed: int = 7, services: int = 40, jobs: int = 15, check: bool = True) -> dict[str, Any]:
    rng = random.Random(seed)
    problem: dict[str, Any] = {
        "name": f"large-s{seed}",
        "description": (
            f"Generated benchmark (seed {seed}): {services} inference services and {jobs} training jobs "
            f"over {TARGET_GPU_TYPES} GPU types; budget, power and racks are loose."
        ),
        "horizon_years": 4,
        "finance": {
            "budget_usd": 2.0e9,
            "electricity_usd_per_kwh": 0.10,
            "pue": 1.3,
            "colocation_usd_per_kw_month": 120,
        },
        "site": {"power_kw": 200000, "racks": 20000, "rack_units": 42, "rack_power_kw": 40},
        "catalog": {"exclude": _catalog_exclusions()},
        "training": _jobs(rng, jobs),
        "inference": _services(rng, services),
    }
    if check:
        _make_feasible(problem)
    return problem


def _make_feasible(problem: dict[str, Any]) -> None:
    """Loosen, deterministically, what the planner's options say cannot be met."""
    from planner.context import prepare
    from planner.io.problem_io import parse_problem

    for _ in range(8):
        ctx = prepare(parse_problem(problem, {}, "<generated>"))
        by_name = {w.name: w for w in ctx.workloads}
        changed = False
        for svc in problem["inference"]:
            if not by_name[svc["name"]].feasible:
                svc["ttft_ms"] = _sig(svc["ttft_ms"] * 1.5)
                svc["tpot_ms"] = _sig(svc["tpot_ms"] * 1.5)
                if "int4" not in svc["precisions"]:
                    svc["precisions"] = [*svc["precisions"], "int4"]
                changed = True
        for job in problem["training"]:
            if not by_name[job["name"]].feasible:
                job["deadline_days"] = int(job["deadline_days"] * 1.5) + 1
                changed = True
        if not changed:
            changed = _fix_chains(problem, by_name)
        if not changed:
            return
    raise SystemExit("could not make the generated problem feasible; try another seed")


def _fix_chains(problem: dict[str, Any], options: dict[str, Any]) -> bool:
    """Earliest finish of each job with its fastest option; a successor that cannot then
    meet its deadline is released when its predecessor's deadline has passed."""
    jobs = {j["name"]: j for j in problem["training"]}
    finish: dict[str, float] = {}

    def earliest_finish(name: str) -> float:
        if name not in finish:
            job = jobs[name]
            start = max([job.get("release_day", 0.0)] + [earliest_finish(d) for d in job.get("after", [])])
            finish[name] = start + min(o.days for o in options[name].training) + 0.02
        return finish[name]

    changed = False
    for name, job in jobs.items():
        if earliest_finish(name) > job["deadline_days"]:
            pred = jobs[job["after"][0]]
            window = job["deadline_days"] - job.get("release_day", 0)
            job["release_day"] = pred["deadline_days"]
            job["deadline_days"] = pred["deadline_days"] + window
            changed = True
            finish.clear()
    return changed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--services", type=int, default=40)
    ap.add_argument("--jobs", type=int, default=15)
    ap.add_argument("-o", "--output", default="-", help="YAML file to write ('-': stdout)")
    ap.add_argument(
        "--no-check",
        action="store_true",
        help="skip the feasibility loosening (for very large problems: the planner may then find no plan)",
    )
    args = ap.parse_args()
    problem = generate(args.seed, args.services, args.jobs, check=not args.no_check)
    text = yaml.safe_dump(problem, sort_keys=False, width=120)
    if args.output == "-":
        sys.stdout.write(text)
    else:
        Path(args.output).write_text(text)
        print(
            f"wrote {args.output}: {len(problem['inference'])} services, {len(problem['training'])} jobs, "
            f"{len(problem['catalog']['exclude'])} GPU types excluded",
            file=sys.stderr,
        )


if __name__ == "__main__":
    main()
