"""Mélange-form instances: the direct CP-SAT model against the full planner on the imported problem.

    python benchmarks/bench_melange.py                       # 4x4 .. 10x10 buckets, slice factor 8 and 16
    python benchmarks/bench_melange.py --sizes 4,6 --slices 8 --time-limit 20
    python benchmarks/bench_melange.py --no-planner          # the direct model only

Each row is one random instance (seeded, so reproducible): 4 GPU types, an n x n
workload_distribution, 40-200 requests/s. (a) `planner.optimize.melange_direct.solve_direct`,
Mélange's model as a small CP-SAT program; (b) the instance written as a Mélange JSON config,
converted with `planner import-melange` and solved by `planner solve PATH --json -` in a fresh
process. A failure of (b) (the planner does not read the mix yet, rejects the plan, times out)
is shown in its row; the script does not stop.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from planner.io.melange import import_config
from planner.io.melange_config import MelangeGpu, MelangeInstance
from planner.optimize.melange_direct import solve_direct
from planner.report.files import write_all

HOURS_PER_YEAR = 8760.0
ROOT = Path(__file__).resolve().parents[1]

# Four rentable types, cheap-and-small to dear-and-large (hourly prices of the Mélange paper's
# GPUs: GCP L4, AWS A10G, Azure A100 80GB; H100 a round figure). `speed`: relative requests/s
# on the smallest requests; `long_ok`: the largest token index it can serve (memory).
GPU_TYPES = (
    ("L4", 0.70, 1.0, 7),
    ("A10G", 1.01, 1.3, 8),
    ("A100-80GB", 3.67, 6.0, 99),
    ("H100", 7.52, 13.0, 99),
)


def random_instance(rows: int, cols: int, slice_factor: int, seed: int) -> MelangeInstance:
    """Throughput falls with request size, faster for small GPUs; some large buckets are unservable."""
    rng = random.Random(seed)
    weights = [[rng.random() ** 2 if rng.random() > 0.15 else 0.0 for _ in range(cols)] for _ in range(rows)]
    weights[0][0] += 0.01  # never all zero
    total = sum(map(sum, weights))
    distribution = tuple(tuple(round(w / total, 6) for w in row) for row in weights)
    gpus = []
    for name, cost, speed, long_ok in GPU_TYPES:
        tputs = []
        for i in range(rows):
            row = []
            for j in range(cols):
                if max(i, j) > long_ok:
                    row.append(0.0)
                    continue
                size = 2 ** (i * 0.7) + 2 ** (j * 0.9)  # longer prompts and outputs: fewer requests/s
                small_penalty = 1 + (0.35 * (i + j) if speed < 2 else 0.05 * (i + j))
                row.append(round(40 * speed / size / small_penalty * rng.uniform(0.85, 1.15), 3) or 0.001)
            tputs.append(tuple(row))
        gpus.append(MelangeGpu(name, cost, tuple(tputs)))
    rate = float(rng.randrange(40, 201))
    return MelangeInstance(tuple(gpus), distribution, rate, slice_factor)


def instance_json(inst: MelangeInstance) -> str:
    return json.dumps(
        {
            "gpu_info": {g.name: {"cost": g.cost_usd_per_hour, "tputs": [list(r) for r in g.tputs]} for g in inst.gpus},
            "workload_distribution": [list(r) for r in inst.distribution],
            "total_request_rate": inst.total_request_rate,
            "slice_factor": inst.slice_factor,
        },
        indent=1,
    )


def solve_with_planner(
    problem_yaml_path: str | Path, time_limit_s: float | None = None
) -> tuple[float | None, str, float | None]:
    """(hourly cost in USD, status, solve seconds) from `planner solve PATH --json -` in a fresh process.

    The hourly cost is the plan's `rent_usd_per_hour` when it reports one above zero, else
    `tco_usd` / 8760 h (an imported problem rents for one year, undiscounted). Status is the plan's
    (optimal | feasible | infeasible), with the exit code when it is not 0, or `error: ...`.
    """
    cmd = [sys.executable, "-m", "planner", "solve", str(Path(problem_yaml_path).resolve()), "--json", "-"]
    if time_limit_s is not None:
        cmd += ["--time-limit", str(time_limit_s)]
    try:
        done = subprocess.run(  # from the repository root: this checkout's planner, installed or not
            cmd, capture_output=True, text=True, timeout=(time_limit_s or 600) * 5 + 60, cwd=ROOT
        )
    except subprocess.TimeoutExpired:
        return None, "error: timed out", None
    try:
        plan = json.loads(done.stdout)
    except json.JSONDecodeError:
        lines = [ln for ln in (done.stderr or done.stdout).strip().splitlines() if ln.strip()]
        return None, f"error (exit {done.returncode}): {lines[-1][:90] if lines else 'no output'}", None
    status = str(plan.get("status", "?"))
    if done.returncode not in (0, 1):
        status += f" (exit {done.returncode}" + (": verifier rejected" if plan.get("verification") else "") + ")"
    hourly = plan.get("rent_usd_per_hour") or None
    if hourly is None and plan.get("tco_usd") is not None and plan.get("status") != "infeasible":
        hourly = float(plan["tco_usd"]) / HOURS_PER_YEAR
    return hourly, status, plan.get("solve_seconds")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="4,6,8,10", help="buckets per axis, comma separated")
    parser.add_argument("--slices", default="8,16", help="slice factors, comma separated")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--time-limit", type=float, default=60.0, help="seconds per solve, both solvers")
    parser.add_argument("--workers", type=int, default=1, help="CP-SAT workers for the direct model")
    parser.add_argument(
        "--plain-search", action="store_true", help="direct model without lb_tree_search (CP-SAT's default search)"
    )
    parser.add_argument("--no-planner", action="store_true", help="skip (b), the full planner")
    parser.add_argument("--keep", type=Path, help="folder to keep the generated JSON and YAML files in")
    args = parser.parse_args()

    sizes = [int(s) for s in args.sizes.split(",")]
    slice_factors = [int(s) for s in args.slices.split(",")]
    header = (
        f"{'buckets':>7} {'slices':>6} {'vars':>5} | {'direct':<9} {'$/h':>8} {'s':>7} | "
        f"{'planner':<30} {'$/h':>8} {'solve s':>7} {'wall s':>7} | {'diff $/h':>8}"
    )
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        for n in sizes:
            for sf in slice_factors:
                seed = args.seed * 1000 + n * 10 + sf
                inst = random_instance(n, n, sf, seed)
                config = folder / f"melange-{n}x{n}-s{sf}.json"
                problem = folder / f"melange-{n}x{n}-s{sf}.yaml"
                write_all({config: instance_json(inst)})
                write_all({problem: import_config(config).text})

                direct = solve_direct(inst, args.time_limit, workers=args.workers, lb_tree_search=not args.plain_search)
                n_vars = len(inst.gpus) + sum(1 for g in inst.gpus for i, j in inst.buckets() if g.tputs[i][j] > 0)
                d_cost = f"{direct.cost_usd_per_hour:8.2f}" if direct.cost_usd_per_hour is not None else f"{'-':>8}"
                row = f"{f'{n}x{n}':>7} {sf:>6} {n_vars:>5} | {direct.status:<9} {d_cost} {direct.seconds:7.2f} | "
                if args.no_planner:
                    print(row + "(skipped)", flush=True)
                    continue
                start = time.perf_counter()
                hourly, status, solve_s = solve_with_planner(problem, args.time_limit)
                wall = time.perf_counter() - start
                p_cost = f"{hourly:8.2f}" if hourly is not None else f"{'-':>8}"
                p_solve = f"{solve_s:7.2f}" if solve_s is not None else f"{'-':>7}"
                diff = (
                    f"{hourly - direct.cost_usd_per_hour:+8.2f}"
                    if hourly is not None and direct.cost_usd_per_hour is not None
                    else f"{'-':>8}"
                )
                print(row + f"{status[:30]:<30} {p_cost} {p_solve} {wall:7.2f} | {diff}", flush=True)
    print(
        "\nvars: integer variables of the direct model (a count per GPU type + slices per servable bucket"
        " and type). diff: planner minus direct (0 when both are optimal)."
    )


if __name__ == "__main__":
    main()
