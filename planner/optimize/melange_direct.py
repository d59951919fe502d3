"""Mélange's own model, solved directly: the reference the planner's answer is checked against.

`solve_direct` is Mélange's allocation (Griggs et al. 2024; see `planner.io.melange_config` for
the config it reads) as a small CP-SAT program: integer slices per bucket and type instead of
Mélange's 0/1 slice assignment, which removes the symmetry between equal slices.
`solve_brute_force` enumerates tiny instances to check it. Neither is part of `planner solve`:
the planner imports a config as a problem (`planner import-melange`) and solves that; these
give the figure to compare with (tests/test_melange.py, benchmarks/bench_melange.py).
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from planner.io.melange_config import MelangeInstance, bucket_name


@dataclass(frozen=True)
class MelangeSolution:
    status: str  # optimal | feasible | infeasible | unknown
    cost_usd_per_hour: float | None
    counts: dict[str, int] = field(default_factory=dict)  # GPUs rented per Mélange type
    slices: dict[tuple[int, int, str], int] = field(default_factory=dict)  # (row, col, GPU name) -> slices
    seconds: float = 0.0
    exact: bool = True  # loads in exact integer units (else rounded up: never under-provisions)


def slice_loads(instance: MelangeInstance) -> dict[tuple[int, int, str], Fraction]:
    """GPUs of a type busy with one slice of a bucket: rate x share / slice_factor / tput, exactly.

    Values are taken as the decimals written in the config (``0.2`` is 1/5), so the example's
    ``0.2 x 30 / 2`` is exactly 3 GPUs, not 3.0000000000000004.
    """
    rate = _exact(instance.total_request_rate)
    loads = {}
    for i, j in instance.buckets():
        per_slice = rate * _exact(instance.distribution[i][j]) / instance.slice_factor
        for g in instance.gpus:
            if g.tputs[i][j] > 0:
                loads[i, j, g.name] = per_slice / _exact(g.tputs[i][j])
    return loads


def _exact(x: float) -> Fraction:
    return Fraction(repr(x)) if isinstance(x, float) else Fraction(x)


def _cost(instance: MelangeInstance, counts: Mapping[str, int]) -> float:
    return math.fsum(g.cost_usd_per_hour * counts.get(g.name, 0) for g in instance.gpus)


def solve_direct(
    instance: MelangeInstance,
    time_limit_s: float | None = None,
    *,
    workers: int = 1,
    scale: int = 1_000_000,
    exact_limit: int = 10**9,
    lb_tree_search: bool = True,
) -> MelangeSolution:
    """Mélange's allocation as a CP-SAT model; deterministic (one worker, or interleaved workers).

    Variables: ``count[g]`` GPUs rented per type; ``s[b, g]`` slices of bucket ``b`` served by
    type ``g``, summing to the slice factor per bucket. Per type, the load
    ``sum_b s[b, g] x slice_load[b, g] <= count[g]`` is written in integers: exactly (times the
    common denominator of that type's loads) when that denominator is at most ``exact_limit``,
    else with each load in units of ``1/scale`` GPU rounded up (never under-provisions; may
    rent one GPU more than needed when the exact load sits within ~1e-6 of an integer).
    Objective: hourly cost, in micro-dollars.

    The first solution found is usually optimal; proving it is the hard part. With one worker,
    ``lb_tree_search`` (CP-SAT's objective lower-bound tree search) proves 12x12 buckets at slice
    factor 16 in seconds where the default search runs out of a minute on 10x10 (see
    benchmarks/bench_melange.py); with more workers the interleaved portfolio includes it.
    """
    from ortools.sat.python import cp_model

    start = time.perf_counter()
    loads = slice_loads(instance)
    model = cp_model.CpModel()
    s_max = instance.slice_factor
    slices: dict[tuple[int, int, str], Any] = {}
    for (i, j, g), _ in sorted(loads.items()):
        slices[i, j, g] = model.new_int_var(0, s_max, f"s[{bucket_name(i, j)},{g}]")
    for i, j in instance.buckets():
        model.add(sum(v for (bi, bj, _), v in slices.items() if (bi, bj) == (i, j)) == s_max)
    counts = {}
    exact = True
    for gpu in instance.gpus:
        mine = {(i, j): load for (i, j, name), load in loads.items() if name == gpu.name}
        denominator = math.lcm(*(f.denominator for f in mine.values())) if mine else 1
        if denominator <= exact_limit:
            coeffs = {b: int(f * denominator) for b, f in mine.items()}
            unit = denominator
        else:
            exact = False
            coeffs = {b: math.ceil(f * scale) for b, f in mine.items()}
            unit = scale
        upper = -(-sum(coeffs.values()) * s_max // unit)  # every slice it can serve, on this type alone
        if gpu.max_count is not None:
            upper = min(upper, gpu.max_count)
        counts[gpu.name] = model.new_int_var(0, upper, f"count[{gpu.name}]")
        if coeffs:
            model.add(sum(c * slices[i, j, gpu.name] for (i, j), c in coeffs.items()) <= unit * counts[gpu.name])
    model.minimize(sum(round(g.cost_usd_per_hour * 1_000_000) * counts[g.name] for g in instance.gpus))

    solver = cp_model.CpSolver()
    solver.parameters.num_workers = workers
    solver.parameters.interleave_search = workers > 1
    solver.parameters.random_seed = 0
    solver.parameters.optimize_with_lb_tree_search = lb_tree_search and workers == 1
    if time_limit_s is not None:
        solver.parameters.max_time_in_seconds = time_limit_s
    status = solver.solve(model)
    seconds = time.perf_counter() - start
    name = {cp_model.OPTIMAL: "optimal", cp_model.FEASIBLE: "feasible", cp_model.INFEASIBLE: "infeasible"}.get(
        status, "unknown"
    )
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return MelangeSolution(name, None, seconds=seconds, exact=exact)
    chosen = {g: int(solver.value(v)) for g, v in counts.items()}
    assigned = {k: int(solver.value(v)) for k, v in slices.items() if solver.value(v)}
    return MelangeSolution(name, _cost(instance, chosen), chosen, assigned, seconds, exact)


def solve_brute_force(instance: MelangeInstance, max_assignments: int = 2_000_000) -> MelangeSolution:
    """Every way to split every bucket's slices among the types that serve it; exact arithmetic.

    Each split fixes the load per type, so the cheapest counts are the loads rounded up. For
    tiny instances only: refuses more than ``max_assignments`` combinations.
    """
    start = time.perf_counter()
    loads = slice_loads(instance)
    s_max = instance.slice_factor
    per_bucket = []
    for i, j in instance.buckets():
        names = [g.name for g in instance.gpus if (i, j, g.name) in loads]
        splits = [
            dict(zip(names, parts, strict=True))
            for parts in itertools.product(range(s_max + 1), repeat=len(names))
            if sum(parts) == s_max
        ]
        per_bucket.append(((i, j), splits))
    total = math.prod(len(splits) for _, splits in per_bucket)
    if total > max_assignments:
        raise ValueError(f"{total:,} assignments: too many for brute force")
    limits = {g.name: g.max_count for g in instance.gpus}
    best: tuple[float, dict[str, int], dict[tuple[int, int, str], int]] | None = None
    for choice in itertools.product(*(splits for _, splits in per_bucket)):
        load: dict[str, Fraction] = {g.name: Fraction(0) for g in instance.gpus}
        for ((i, j), _), split in zip(per_bucket, choice, strict=True):
            for g, k in split.items():
                load[g] += k * loads[i, j, g]
        counts = {g: math.ceil(x) for g, x in load.items()}
        if any((cap := limits[g]) is not None and counts[g] > cap for g in counts):
            continue
        cost = _cost(instance, counts)
        if best is None or cost < best[0] - 1e-9:
            assigned = {
                (i, j, g): k
                for ((i, j), _), split in zip(per_bucket, choice, strict=True)
                for g, k in split.items()
                if k
            }
            best = (cost, counts, assigned)
    seconds = time.perf_counter() - start
    if best is None:
        return MelangeSolution("infeasible", None, seconds=seconds)
    return MelangeSolution("optimal", best[0], best[1], best[2], seconds)
