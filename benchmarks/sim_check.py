"""Every example plan checked by simulation: the analytic p99 against the simulated one.

    python benchmarks/sim_check.py [--requests 30000]

For each problem in problems/ with a modelled inference service: solve it, replay 30,000
requests per service through the plan (``planner simulate``'s engine, random routing within a
replica kind, seed 0), and print per service the simulated and analytic p99 TTFT and TPOT,
their ratio (simulated / analytic; the issue asks for 0.9-1.1), whether every target holds,
and the simulation time.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from planner.context import prepare
from planner.io.problem_io import load_problem
from planner.pipeline import plan_context
from planner.simulate.run import simulate_plan

PROBLEMS = Path(__file__).resolve().parents[1] / "problems"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=30_000)
    args = parser.parse_args()
    print(
        f"{'plan':24} {'service':16} {'TTFT p99 sim/analytic':>24} {'ratio':>6} "
        f"{'TPOT p99 sim/analytic':>22} {'ratio':>6} {'holds':>6} {'sim s':>6}"
    )
    worst = 0.0
    for path in sorted(PROBLEMS.glob("*.yaml")):
        loaded = load_problem(path)
        if not any(s.model is not None for s in loaded.problem.inference):
            continue
        ctx = prepare(loaded)
        plan = plan_context(ctx)
        if plan.status == "infeasible":
            print(f"{path.stem:24} infeasible")
            continue
        start = time.perf_counter()
        results = simulate_plan(plan, loaded, ctx.catalog, args.requests, 0, 1)
        seconds = time.perf_counter() - start
        for r in results:
            if r.holds is None:
                continue
            row = r.row
            rt = row["ttft_p99_ms"] / row["analytic_ttft_p99_ms"]
            rp = row["tpot_p99_ms"] / row["analytic_tpot_p99_ms"]
            worst = max(worst, abs(rt - 1), abs(rp - 1))
            ttft = f"{row['ttft_p99_ms']:,.0f} / {row['analytic_ttft_p99_ms']:,.0f}"
            tpot = f"{row['tpot_p99_ms']:,.1f} / {row['analytic_tpot_p99_ms']:,.1f}"
            print(
                f"{path.stem:24} {r.name:16} {ttft:>24} {rt:6.2f} {tpot:>22} {rp:6.2f} {r.holds!s:>6} {seconds:6.1f}"
            )
    print(f"\nlargest |simulated / analytic - 1|: {worst:.1%}")


if __name__ == "__main__":
    main()
