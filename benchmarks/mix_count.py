"""How many replica mixes each service of a generated fleet has within a cost margin of its floor.

    python benchmarks/mix_count.py [--seed 7] [--only-types A,B,...] [--no-jobs] [--margin 194000]

An exact master over the services' mixes (choose one per service, whole servers per pool) needs
every mix that an optimum could use: those whose share-price cost (``optimize.floors``) is within
the gap of the service's floor. Each service alone is enumerated by CP-SAT with that cost bound
(``--seconds`` each, at most ``--cap`` distinct replica counts); prints the count per service.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_large import fleet, fleet_arguments


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    fleet_arguments(ap)
    ap.add_argument("--margin", type=float, default=194_000.0, help="dollars above each service's floor")
    ap.add_argument("--seconds", type=float, default=20.0, help="wall seconds per service's enumeration")
    ap.add_argument("--cap", type=int, default=5000, help="at most so many mixes per service")
    args = ap.parse_args()

    from ortools.sat.python import cp_model

    from planner.optimize.floors import alone_model
    from planner.optimize.model import build
    from planner.pipeline import prepare

    loaded = fleet(args)
    ctx = prepare(loaded)
    built = build(ctx.problem, ctx.catalog, ctx.workloads)

    class Mixes(cp_model.CpSolverSolutionCallback):
        def __init__(self, counts: list[cp_model.IntVar]) -> None:
            super().__init__()
            self.counts, self.seen = counts, set[tuple[int, ...]]()

        def on_solution_callback(self) -> None:
            self.seen.add(tuple(self.value(r) for r in self.counts))
            if len(self.seen) >= args.cap:
                self.stop_search()

    total, capped, cut = 0, 0, 0
    for name, floor in built.floors.items():
        if floor.found is None:
            print(f"  {name}: no floor")
            continue
        model, counts = alone_model(floor, name)
        model.add(sum(c * r for c, r in zip(floor.costs, counts, strict=True)) <= int(floor.found[0] + args.margin))
        solver = cp_model.CpSolver()
        solver.parameters.enumerate_all_solutions = True
        solver.parameters.num_workers = 1
        solver.parameters.max_time_in_seconds = args.seconds
        found = Mixes(counts)
        complete = solver.solve(model, found) == cp_model.OPTIMAL and len(found.seen) < args.cap
        total += len(found.seen)
        capped += len(found.seen) >= args.cap
        cut += not complete
        print(f"  {name}: {len(found.seen)} mixes over {len(counts)} kinds{'' if complete else ' (not complete)'}")
    print(f"{len(built.floors)} services: {total} mixes; {capped} at the cap, {cut} enumerations not complete")


if __name__ == "__main__":
    main()
