"""What-if throughput: a 100-variant grid of problems/startup.yaml, one process vs all cores.

    python benchmarks/bench_whatif.py [--variants 100] [--fresh]

Prints wall time and variants per second for each worker count, and checks that
the rows are identical either way; ``--fresh`` also solves every variant on its own
(no budget reuse, all cores) and checks the grid's rows against those.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from planner.io.problem_io import load_problem
from planner.whatif.scenarios import run_grid

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--variants", type=int, default=100)
    parser.add_argument("--fresh", action="store_true", help="check the rows against a fresh solve of each variant")
    args = parser.parse_args()
    side = max(1, round(args.variants**0.5))
    prices = [round(0.04 + 0.02 * i, 3) for i in range(side)]
    budgets = [1_000_000 + 300_000 * i for i in range(max(1, args.variants // side))]
    sets = [("finance.electricity_usd_per_kwh", prices), ("finance.budget_usd", budgets)]
    loaded = load_problem(ROOT / "problems" / "startup.yaml")
    n = len(prices) * len(budgets)
    results = {}
    for workers in sorted({1, os.cpu_count() or 1}):
        start = time.perf_counter()
        rows = run_grid(loaded, sets, workers=workers)
        seconds = time.perf_counter() - start
        results[workers] = rows
        print(f"{n} variants, {workers} worker(s): {seconds:6.1f} s  {n / seconds:5.2f} variants/s")
    first, *rest = results.values()
    print("rows identical across worker counts:", all(r == first for r in rest))
    if args.fresh:
        from planner.executors import map_ordered
        from planner.io.overrides import grid

        start = time.perf_counter()
        jobs = [(loaded, [v], None) for v in grid(sets)]
        fresh = [r[0] for r in map_ordered(_alone, jobs, os.cpu_count() or 1)]
        print(f"fresh solves: {time.perf_counter() - start:6.1f} s; rows identical to fresh solves: {fresh == first}")
        for a, b in zip(first, fresh, strict=True):
            if a != b:
                print("  differs:", a, "vs", b)
    print("statuses:", {s: sum(1 for r in first if r["status"] == s) for s in {r["status"] for r in first}})


def _alone(job):  # type: ignore[no-untyped-def]
    from planner.whatif.scenarios import solve_budgets

    return solve_budgets(*job)


if __name__ == "__main__":
    main()
