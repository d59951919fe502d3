"""Two-stage plans under uncertainty: how long `solve --scenarios` takes as scenarios grow.

    python benchmarks/bench_two_stage.py --samples 20 [--time-limit 60] [--problem problems/startup.yaml]

Monte Carlo draws of the chat service's demand (uniform 12-30 requests/s) and the electricity price
(normal 0.12 +- 0.03 $/kWh, at least 0.04), seed 7. Prints the whole run's wall time (each scenario's own
optimum, the purchases scored, the pair floors, the joint model when it runs, the plan), its status and
proven gap, and the figures. ``--time-limit`` bounds each solve (deterministic seconds).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import planner.whatif.two_stage as two_stage
from planner.io.problem_io import load_problem
from planner.whatif.montecarlo import load_scenarios

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--problem", type=Path, default=ROOT / "problems" / "startup.yaml")
    args = parser.parse_args()
    spec = (
        f"monte_carlo:\n  samples: {args.samples}\n  seed: 7\n  draws:\n"
        "    inference.chat.requests_per_s: {uniform: [12, 30]}\n"
        "    finance.electricity_usd_per_kwh: {normal: [0.12, 0.03], min: 0.04}\n"
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "scenarios.yaml"
        path.write_text(spec)
        scenarios = load_scenarios(str(path))
    start = time.perf_counter()
    plan = two_stage.plan_under_uncertainty(load_problem(str(args.problem)), scenarios, None, args.time_limit)
    st = plan.stochastic or {}
    print(
        f"{args.samples} scenarios: whole run {time.perf_counter() - start:.1f} s wall; {st.get('status')}, "
        f"proven gap {st.get('gap')}, {st.get('method')}, {st.get('purchases_scored')} purchases scored"
    )
    keys = ("servers", "expected_tco_usd", "lower_bound_usd", "deterministic_expected_tco_usd", "vss_usd", "evpi_usd")
    for key in keys:
        print(f"  {key}: {st.get(key)}")


if __name__ == "__main__":
    main()
