"""Would a bound that sees each service's whole replicas close a large fleet's gap? The fleet
model's LP relaxation, by cost family, and the same LP with each service's replica counts held
to a convex combination of its integer mixes (a Dantzig-Wolfe master, grown by column generation).

    python benchmarks/mix_master.py [--seed 7] [--only-types A,B,...] [--no-jobs] [--rounds 40]
                                    [--whole-cuts]

The model is the one the planner builds for the generated fleet (``bench_large.py``), its floor
and fleet cuts included. Its LP is solved by GLOP over the rows an LP can hold: the linear
constraints without enforcement literals and the clauses (``exactly_one``, ``at_most_one``,
``bool_or``); intervals, cumulatives and enforced rows are left out, so it is a relaxation.

The master adds, for each service with a floor, ``replicas = sum over its mixes (mix x weight)``
with the weights summing to 1. Its columns start with the service's floor mix and its mix of the
type-set floor; each round prices every service once (CP-SAT on the service alone,
``floors.alone_model``, its objective the duals of those rows) and adds the mixes of negative
reduced cost. The restricted master's value is at least the full master's (it has fewer columns),
which is the Dantzig-Wolfe bound: every round's value is an upper bound on what convexifying the
services' integer mixes can give, converged or not. It stops when no mix prices out, at ``--rounds``,
or when GLOP ends without an optimum (it can, on a master of hundreds of degenerate columns). The
master is degenerate: its duals are far from a replica's worth, and the mixes priced (of any size
the service alone allows) seldom lower it; on bench_large it is not run to convergence, and needs
not be for the upper bound it gives.

``--whole-mixes`` adds to the master, for each service and each rack, GPU-type flag and leaf a
kind of its needs, ``that variable >= the weights of its mixes that use it``: a mix buys its racks,
types and leaves whole. The pricing does not see these rows (a priced mix may not lower the
master), which leaves every value an upper bound on that master's optimum.

``--whole-cuts`` first adds, for each replica kind ``r`` (at most ``U``) on a pool, ``U x racks >= r``,
``U x type flag >= r`` and, on a pool cabled to a fabric, ``U x leaves >= r`` (a replica there buys
a rack, its type and a leaf), and prints the LP again.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_large import fleet, fleet_arguments

INFINITE = 2**62  # CP-SAT's domains end near 2**63: past this a row's side is open
PRICE_SCALE = 100  # duals in cents for the integer pricing objective
PRICE_DET_S = 2.0
IDLE_USD = 1e9  # a weight on no mix: more than any fleet's plan


@dataclass
class Relaxation:
    """GLOP over a CP-SAT model's linear rows: the solver, one column per CP-SAT variable, and
    the objective's scale (CP-SAT's ``scaling_factor``)."""

    solver: Any
    columns: list[Any]
    scale: float
    names: list[str]
    offset_usd: float
    objective_terms: list[tuple[int, int]]

    def solve(self) -> float | None:
        from ortools.linear_solver import pywraplp

        if self.solver.Solve() != pywraplp.Solver.OPTIMAL:
            return None
        return float(self.solver.Objective().Value()) * self.scale

    def families(self) -> dict[str, float]:
        """The objective by the name of its variables' family (``servers``, ``racks``, ...)."""
        out: dict[str, float] = {}
        for v, a in self.objective_terms:
            fam = self.names[v].split("[")[0]
            out[fam] = out.get(fam, 0.0) + a * self.columns[v].solution_value() * self.scale
        return out


def _bounds(lo: int, hi: int, infinity: float) -> tuple[float, float]:
    return (-infinity if lo <= -INFINITE else float(lo)), (infinity if hi >= INFINITE else float(hi))


def relaxation(proto: Any) -> Relaxation:
    """The LP of ``proto`` (a ``cp_model_pb2.CpModelProto``): see the module's docstring."""
    from ortools.linear_solver import pywraplp

    lp = pywraplp.Solver.CreateSolver("GLOP")
    inf = lp.infinity()
    xs = [lp.NumVar(float(v.domain[0]), float(v.domain[-1]), "") for v in proto.variables]
    for c in proto.constraints:
        kind = c.WhichOneof("constraint")
        if len(c.enforcement_literal):
            continue
        if kind == "linear":
            row = lp.Constraint(*_bounds(c.linear.domain[0], c.linear.domain[-1], inf))
            for v, a in zip(c.linear.vars, c.linear.coeffs, strict=True):
                row.SetCoefficient(xs[v], float(a))
        elif kind in ("exactly_one", "at_most_one", "bool_or"):
            literals = list(getattr(c, kind).literals)
            negated = sum(1 for lit in literals if lit < 0)  # x' = 1 - x moves 1 to the right-hand side
            lo = -inf if kind == "at_most_one" else 1.0 - negated
            hi = inf if kind == "bool_or" else 1.0 - negated
            row = lp.Constraint(lo, hi)
            for lit in literals:
                row.SetCoefficient(xs[lit] if lit >= 0 else xs[-lit - 1], 1.0 if lit >= 0 else -1.0)
    objective = lp.Objective()
    terms = list(zip(proto.objective.vars, proto.objective.coeffs, strict=True))
    for v, a in terms:
        objective.SetCoefficient(xs[v], float(a))
    objective.SetOffset(float(proto.objective.offset))
    objective.SetMinimization()
    names = [v.name for v in proto.variables]
    scale = float(proto.objective.scaling_factor or 1.0)
    return Relaxation(lp, xs, scale, names, float(proto.objective.offset) * scale, terms)


def proto_of(model: Any) -> Any:
    """A built model's proto as a ``cp_model_pb2`` message (the builder's is not one; its text is)."""
    from google.protobuf import text_format
    from ortools.sat import cp_model_pb2

    return text_format.Parse(str(model.proto), cp_model_pb2.CpModelProto())


def add_whole_cuts(lp: Relaxation, b: Any) -> int:
    """``--whole-cuts`` on the LP: a replica kind ``r`` (at most ``U``) on a pool makes each of
    ``_needs`` at least ``r / U``."""
    from planner.optimize.built import upper

    count = 0
    for f in b.floors.values():
        for o, r in f.reps:
            top = upper(r)
            for var in _needs(b, o) if top > 0 else []:
                row = lp.solver.Constraint(0.0, lp.solver.infinity())
                row.SetCoefficient(lp.columns[var], float(top))
                row.SetCoefficient(lp.columns[r.index], -1.0)
                count += 1
    return count


def _needs(b: Any, o: Any) -> list[int]:
    """The variables (indices) a replica of option ``o`` makes at least 1: its pool's racks, its
    GPU type's flag, and the leaves of the fabric its pool is cabled to (``job_floor.cabled``)."""
    from planner.optimize.job_floor import cabled
    from planner.optimize.type_floors import owned_type

    pool = b.pools.get(o.pool)
    if pool is None or o.rent_usd_per_gpu_hour is not None:
        return []
    out = [pool.racks.index] if pool.fit_per_rack else []
    if owned_type(b, o):
        out.append(b.gpu_type_used[o.pool.gpu].index)
    if (fid := cabled(b, o)) is not None:
        out.append(b.fabrics[fid].leaves.index)
    return out


class MixMaster:
    """The LP with each service's replicas a convex combination of its known integer mixes."""

    def __init__(
        self,
        lp: Relaxation,
        floors: dict[str, Any],
        starts: dict[str, list[tuple[int, ...]]],
        whole: Any = None,
    ) -> None:
        self.lp, self.floors = lp, floors
        # with ``whole`` (the Built): per service, each rack, type flag and leaf its kinds need is
        # at least the weight of its mixes that use it (``--whole-mixes``)
        self.needs = {n: [_needs(whole, o) for o, _ in f.reps] for n, f in floors.items()} if whole is not None else {}
        self.at_least: dict[tuple[str, int], Any] = {}
        self.idle: list[Any] = []
        self.rows: dict[str, list[Any]] = {}
        self.convexity: dict[str, Any] = {}
        self.known: dict[str, set[tuple[int, ...]]] = {}
        for name, f in floors.items():
            self.rows[name] = []
            for _, r in f.reps:
                row = lp.solver.Constraint(0.0, 0.0)
                row.SetCoefficient(lp.columns[r.index], 1.0)
                self.rows[name].append(row)
            self.convexity[name] = lp.solver.Constraint(1.0, 1.0)
            # a weight on no mix at a prohibitive price: GLOP's re-solves of the degenerate master
            # end abnormally far less often with it; a value is counted only where none is used
            self.idle.append(lp.solver.NumVar(0.0, 1.0, ""))
            self.convexity[name].SetCoefficient(self.idle[-1], 1.0)
            lp.solver.Objective().SetCoefficient(self.idle[-1], IDLE_USD / lp.scale)
            self.known[name] = set()
            for counts in starts[name]:
                self.add(name, counts)

    def add(self, name: str, counts: tuple[int, ...]) -> bool:
        if counts in self.known[name]:
            return False
        self.known[name].add(counts)
        weight = self.lp.solver.NumVar(0.0, 1.0, "")
        for row, n in zip(self.rows[name], counts, strict=True):
            if n:
                row.SetCoefficient(weight, -float(n))
        self.convexity[name].SetCoefficient(weight, 1.0)
        if name in self.needs:
            for var in sorted({v for n, vs in zip(counts, self.needs[name], strict=True) if n for v in vs}):
                row = self.at_least.get((name, var))
                if row is None:
                    row = self.at_least[(name, var)] = self.lp.solver.Constraint(0.0, self.lp.solver.infinity())
                    row.SetCoefficient(self.lp.columns[var], 1.0)
                row.SetCoefficient(weight, -1.0)
        return True

    def price(self) -> list[tuple[str, tuple[int, ...]]]:
        """Every service's mix of least reduced cost, where it is below -$1 (read after a solve)."""
        from ortools.sat.python import cp_model

        from planner.optimize.floors import alone_model

        duals = {
            n: ([row.dual_value() for row in rows], self.convexity[n].dual_value()) for n, rows in self.rows.items()
        }
        found = []
        for name, f in self.floors.items():
            prices, sigma = duals[name]
            alone, rs = alone_model(f, name)
            alone.minimize(sum(round(pi * PRICE_SCALE) * r for pi, r in zip(prices, rs, strict=True)))
            solver = cp_model.CpSolver()
            solver.parameters.num_workers = 1
            solver.parameters.max_deterministic_time = PRICE_DET_S
            if solver.solve(alone) in (cp_model.OPTIMAL, cp_model.FEASIBLE):
                reduced = solver.objective_value / PRICE_SCALE - sigma
                if reduced * self.lp.scale < -1.0:
                    found.append((name, tuple(int(solver.value(r)) for r in rs)))
        return found


def column_generation(
    lp: Relaxation,
    b: Any,
    rounds: int,
    say: Any = print,
    more: dict[str, tuple[int, ...]] | None = None,
    whole_mixes: bool = False,
) -> list[float]:
    """The restricted master's value at each round (each an upper bound on the Dantzig-Wolfe
    bound); ``more``: a further first mix per service (a plan's)."""
    floors = {n: f for n, f in sorted(b.floors.items()) if f.found is not None}
    mixes = b.type_set.mixes if b.type_set is not None else {}
    starts = {n: [f.found[1], *([mixes[n]] if n in mixes else [])] for n, f in floors.items()}
    for name, counts in (more or {}).items():
        starts[name].append(counts)
    master = MixMaster(lp, floors, starts, b if whole_mixes else None)
    values: list[float] = []
    for i in range(rounds):
        value = lp.solve()
        if value is None:
            say(f"  round {i}: GLOP ended without an optimum; the last value stands")
            break
        if any(v.solution_value() > 0.0 for v in master.idle):
            say(f"  round {i}: a service takes no mix (the master has too few): no value")
            break
        values.append(value)
        new = master.price()
        say(f"  round {i}: master ${value:,.0f}, {sum(len(k) for k in master.known.values())} mixes, +{len(new)}")
        if not new:
            say("  no mix prices out: the master's value is the Dantzig-Wolfe bound")
            break
        for name, counts in new:
            master.add(name, counts)
    return values


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    fleet_arguments(ap)
    ap.add_argument("--rounds", type=int, default=40, help="column generation rounds at most")
    ap.add_argument("--whole-cuts", action="store_true", help="also the LP with a replica buying its rack, type, leaf")
    ap.add_argument("--whole-mixes", action="store_true", help="in the master, a mix buys its racks, types, leaves")
    args = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]

    from planner.context import prepare
    from planner.optimize.model import build

    t0 = time.perf_counter()
    ctx = prepare(fleet(args))
    b = build(ctx.problem, ctx.catalog, ctx.workloads)
    lp = relaxation(proto_of(b.model))
    value = lp.solve()
    print(f"model built, its LP solved: {time.perf_counter() - t0:.0f} s")
    print(f"the LP relaxation: ${value:,.0f}" if value is not None else "the LP relaxation: no optimum")
    for fam, usd in sorted(lp.families().items(), key=lambda kv: -kv[1]):
        if abs(usd) >= 0.5:
            print(f"    {fam:24s} ${usd:>14,.0f}")
    if args.whole_cuts:
        n = add_whole_cuts(lp, b)
        value = lp.solve()
        print(f"with {n} whole cuts: ${value:,.0f}" if value is not None else "with whole cuts: no optimum")
    values = column_generation(lp, b, args.rounds, whole_mixes=args.whole_mixes)
    if values:
        print(
            f"the mixes' master: ${min(values):,.0f} at most ({len(values)} rounds, {time.perf_counter() - t0:.0f} s)"
        )
    if value is not None and values:
        which = "the LP with the whole cuts" if args.whole_cuts else "the LP"
        print(f"  that is ${min(values) - value:,.0f} at most above {which}")


if __name__ == "__main__":
    main()
