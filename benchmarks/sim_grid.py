"""One replica, many shapes and loads: the analytic p99 (planner.perf.load_mix) against the
simulated one (planner.simulate, the same per-iteration cost), Poisson arrivals.

    python benchmarks/sim_grid.py [--requests 20000]

For each (model, GPU, tensor parallel, input/output tokens) and each load (a share of the
replica's saturation rate), replays ``--requests`` requests (seed 0, the first tenth dropped as
warm-up) through one replica and prints both p99s and their ratio (simulated / analytic).
"""

from __future__ import annotations

import argparse

import numpy as np

from planner.catalog import load_catalog
from planner.perf.inference import engine_for
from planner.perf.inference_types import InferenceQuery
from planner.perf.links import link_for
from planner.perf.load import Load
from planner.perf.shapes import shape_of
from planner.simulate.analytic import analytic_p99s
from planner.simulate.fleet import Kind, replay, route_kinds
from planner.simulate.traffic import Bucket, poisson_traffic

CASES = [
    ("llama-3.1-70b", "H100-SXM", 4, 1024, 256),
    ("llama-3.1-70b", "H100-SXM", 4, 8000, 200),
    ("llama-3.1-70b", "B200", 4, 16000, 1000),
    ("llama-3.1-8b", "L40S", 1, 512, 256),
    ("llama-3.1-70b", "B200", 2, 2000, 500),
    ("mixtral-8x7b", "H100-SXM", 2, 1500, 300),
    ("llama-3.1-8b", "H100-SXM", 1, 256, 128),
]
LOADS = (0.3, 0.5, 0.7, 0.85)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20_000)
    n = parser.parse_args().requests
    cat = load_catalog()
    ratios: list[float] = []
    for model, gpu_id, tp, isl, osl in CASES:
        gpu = cat.gpus[gpu_id]
        chassis = next(s for s in cat.servers.values() if gpu_id in s.gpus)
        q = InferenceQuery(shape_of(model, cat), gpu, tp, "fp8", isl, osl, link_for(chassis, gpu, tp))
        engine = engine_for(q, cat.efficiency.generations[gpu.generation], cat.efficiency.serving)
        assert engine is not None
        saturation = Load(engine, isl, osl).saturation_rate()
        for load in LOADS:
            rate = load * saturation
            buckets = [Bucket("all", isl, osl, 1.0)]
            rng = np.random.default_rng(0)
            traffic = poisson_traffic(rate, n, rng, buckets)
            out = replay([Kind(engine, 1)], traffic, route_kinds(traffic, [[1.0]], rng), engine.ttft_overhead_s)
            warm = slice(n // 10, None)
            ttft = np.percentile((out.first_s - out.send_s)[warm], 99) * 1e3
            tpot = np.percentile(((out.finish_s - out.first_s) / max(osl - 1, 1))[warm], 99) * 1e3
            (a_ttft, a_tpot), _ = analytic_p99s([Kind(engine, 1)], buckets, [[1.0]], rate)
            ratios += [ttft / a_ttft, tpot / a_tpot]
            print(
                f"{model:14} {gpu_id:9} TP{tp} {isl:>6}/{osl:<5} load {load:.2f} ({rate:7.2f}/s)  "
                f"TTFT p99 sim {ttft:8.1f} analytic {a_ttft:8.1f} ({ttft / a_ttft:4.2f})  "
                f"TPOT p99 sim {tpot:6.1f} analytic {a_tpot:6.1f} ({tpot / a_tpot:4.2f})",
                flush=True,
            )
    errors = np.abs(np.log(ratios))
    print(f"\nmedian |log ratio| {np.exp(np.median(errors)):.3f}x; within 10%: {np.mean(errors <= np.log(1.1)):.0%}")


if __name__ == "__main__":
    main()
