"""How long `planner simulate` takes: every example plan, and a generated 40-service plan.

    python benchmarks/bench_simulate.py [--requests 30000] [--seed 0] [--no-large]
                                        [--large-seed 7] [--time-limit S] [--workers 1]
                                        [--router least-outstanding|round-robin]

For each problems/*.yaml that has inference services (and a feasible plan), and for the
problem benchmarks/generate.py writes (40 services, 15 jobs; solved first, as
bench_large.py does), prints the simulation's wall and CPU time, the requests simulated
per second, and per service the simulated p99s against the targets and the plan's
analytic p99s. Solving is timed apart and not counted. Goal: a 40-service plan checked
in seconds.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))


def _simulate(
    label: str, loaded: object, requests: int, seed: int, time_limit: float | None, workers: int, router: str
) -> tuple[float, int]:
    from planner.context import prepare
    from planner.pipeline import plan_context
    from planner.simulate.run import simulate_plan

    t0 = time.perf_counter()
    ctx = prepare(loaded)  # type: ignore[arg-type]
    plan = plan_context(ctx, time_limit)
    solve_s = time.perf_counter() - t0
    if plan.status == "infeasible":
        print(f"{label}: no feasible plan, skipped")
        return 0.0, 0
    wall0, cpu0 = time.perf_counter(), time.process_time()
    results = simulate_plan(plan, loaded, ctx.catalog, requests, seed, workers, router)  # type: ignore[arg-type]
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    simulated = sum(int(r.row.get("requests") or 0) for r in results)
    print(
        f"{label}: {len(results)} services, {simulated:,} requests in {wall:.2f} s wall ({cpu:.2f} s CPU), "
        f"{simulated / max(wall, 1e-9):,.0f} requests/s ({workers} worker(s), {router}); "
        f"solve {solve_s:.1f} s (not counted)"
    )
    for r in results:
        row = r.row
        if r.holds is None:
            print(f"    {r.name:24s} skipped: {row.get('skipped')}")
            continue
        print(
            f"    {r.name:24s} {r.seconds:5.2f} s  TTFT p99 {row['ttft_p99_ms']:8.1f} ms "
            f"(target {row['ttft_target_ms']:g}, analytic {row['analytic_ttft_p99_ms']:.1f})  "
            f"TPOT p99 {row['tpot_p99_ms']:6.1f} ms (target {row['tpot_target_ms']:g}, "
            f"analytic {row['analytic_tpot_p99_ms']:.1f})  within SLO {row['slo_attainment']:.1%}  "
            f"{'holds' if r.holds else 'MISSES'}"
        )
    return wall, simulated


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=30_000, help="requests per service")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-large", action="store_true", help="skip the generated 40-service plan")
    ap.add_argument("--large-seed", type=int, default=7, help="seed of benchmarks/generate.py")
    ap.add_argument("--time-limit", type=float, default=None, help="solver limit for the large problem")
    ap.add_argument("--workers", type=int, default=1, help="worker processes (services in parallel)")
    ap.add_argument("--router", default="least-outstanding", help="least-outstanding | round-robin")
    args = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[attr-defined]

    import yaml

    from planner.io.problem_io import load_problem, loads_problem

    total_wall, total_requests = 0.0, 0
    for path in sorted((ROOT / "problems").glob("*.yaml")):
        loaded = load_problem(path)
        if not loaded.problem.inference:
            continue
        wall, n = _simulate(path.name, loaded, args.requests, args.seed, None, args.workers, args.router)
        total_wall, total_requests = total_wall + wall, total_requests + n
    if total_requests:
        print(
            f"examples: {total_requests:,} requests in {total_wall:.2f} s, "
            f"{total_requests / total_wall:,.0f} requests/s\n"
        )
    if args.no_large:
        return
    from generate import generate

    text = yaml.safe_dump(generate(args.large_seed), sort_keys=False, width=120)
    loaded = loads_problem(text, f"large-s{args.large_seed}.yaml")
    label = f"generated large-s{args.large_seed}"
    _simulate(label, loaded, args.requests, args.seed, args.time_limit, args.workers, args.router)


if __name__ == "__main__":
    main()
