"""``benchmarks/mix_master.py``: its LP and its mixes' master lie between nothing and the optimum."""

from __future__ import annotations

import importlib.util
import itertools
import sys
from pathlib import Path

import pytest
from ortools.sat.python import cp_model

from planner.context import prepare
from planner.io.problem_io import load_problem
from planner.optimize.model import build

_HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(_HERE / "benchmarks"))
_spec = importlib.util.spec_from_file_location("mix_master", _HERE / "benchmarks" / "mix_master.py")
assert _spec is not None and _spec.loader is not None
_probe = importlib.util.module_from_spec(_spec)
sys.modules["mix_master"] = _probe  # its dataclasses look their module up
_spec.loader.exec_module(_probe)


@pytest.mark.parametrize("whole_mixes", [False, True])
@pytest.mark.parametrize("name", ["serve-70b", "lab-train-and-serve"])
def test_the_lp_and_the_mixes_master_bound_the_optimum_from_below(name: str, whole_mixes: bool) -> None:
    """The LP is a relaxation and the master only adds rows to it (LP <= master); with the
    optimal plan's own mixes among its columns, that plan is one of the master's (it buys the
    racks, types and leaves its mixes use), so its value is at most the optimum (CP-SAT's,
    solved here); columns are only added (never higher)."""
    ctx = prepare(load_problem(_HERE / "problems" / f"{name}.yaml"))
    b = build(ctx.problem, ctx.catalog, ctx.workloads)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0
    assert solver.solve(b.model) == cp_model.OPTIMAL
    optimum = solver.objective_value

    lp = _probe.relaxation(_probe.proto_of(b.model))
    value = lp.solve()
    assert value is not None and value <= optimum + 1e-6 * optimum
    # the objective by family adds up to the LP's value (what the script prints for the LP)
    assert sum(lp.families().values()) + lp.offset_usd == pytest.approx(value, rel=1e-9)
    plan = {n: tuple(int(solver.value(r)) for _, r in f.reps) for n, f in b.floors.items() if f.found is not None}
    said: list[str] = []
    values = _probe.column_generation(lp, b, 6, said.append, plan, whole_mixes)
    assert values and said[0].startswith("  round 0: master $"), said
    assert all(v >= value - 1e-6 * value for v in values)
    assert all(later <= earlier + 1e-6 * earlier for earlier, later in itertools.pairwise(values))
    assert values[-1] <= optimum + 1e-6 * optimum
