"""The small models' start (``optimize.type_start``): the model with only a few GPU types' pools
open is solved first, and its plan hints the search. A restriction of the model: its optimum is
never below the model's, and the search from it ends on the same least TCO as without it."""

from __future__ import annotations

import pytest
from ortools.sat.python import cp_model

from planner import pipeline
from planner.context import Context, prepare
from planner.io.problem_io import load_problem
from planner.optimize.budget import run_budget
from planner.optimize.built import Built
from planner.optimize.model import build
from planner.optimize.solve import START_PHASE, Solved
from planner.optimize.type_start import start_types, type_start
from tests.conftest import PROBLEMS


def _built(name: str, kept: dict | None = None) -> tuple[Context, Built]:
    ctx = prepare(load_problem(PROBLEMS / name))
    return ctx, build(ctx.problem, ctx.catalog, ctx.workloads, kept=kept)


def _least_tco(ctx: Context, b: Built) -> Solved:
    with run_budget(60.0):
        return pipeline._solved(b, ctx.problem, 60.0, None, ties=False)


def _optimum(model: cp_model.CpModel) -> tuple[int, float]:
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_deterministic_time = 30.0
    return solver.solve(model), solver.objective_value


def test_startups_start_is_a_restriction_that_holds_its_optimum() -> None:
    _, b = _built("startup.yaml")
    start = type_start(b)
    assert start is not None
    kept = set(start_types(b))
    gpus = {key.gpu for key in b.pools}
    assert kept < gpus  # some types closed
    whole_status, whole = _optimum(b.model)
    start_status, restricted = _optimum(start)
    assert whole_status == start_status == cp_model.OPTIMAL
    assert restricted == whole  # startup's optimum is on the start's types (measured)
    assert len(start.proto.constraints) == len(b.model.proto.constraints) + len(
        [k for k in b.pools if k.gpu not in kept]
    )


@pytest.mark.parametrize(
    "name", ["startup.yaml", "train-then-serve.yaml", "inference-tight-power.yaml", "lab-train-and-serve.yaml"]
)
def test_the_start_changes_no_optimum(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    ctx, b = _built(name)
    started = _least_tco(ctx, b)
    monkeypatch.setattr(pipeline, "_start", lambda built: (None, START_PHASE))
    ctx, b = _built(name)
    plain = _least_tco(ctx, b)
    assert started.status == plain.status == "optimal"
    assert round(started.objective) == round(plain.objective)


def test_a_start_whose_types_cannot_hold_a_plan_is_infeasible_and_the_search_goes_on() -> None:
    # inference-tight-power's services' floors ignore the site's power: on their types no plan fits
    ctx, b = _built("inference-tight-power.yaml")
    start = type_start(b)
    assert start is not None
    assert _optimum(start)[0] == cp_model.INFEASIBLE
    assert _least_tco(ctx, b).status == "optimal"


def test_owned_pools_stay_open() -> None:
    _, b = _built("startup.yaml")
    closed = sorted(k for k in b.pools if k.gpu not in start_types(b))
    assert closed
    _, owned = _built("startup.yaml", kept={closed[0]: (1, 1)})
    assert closed[0].gpu in start_types(owned)


def test_several_periods_get_no_type_start() -> None:
    _, b = _built("growth-5y.yaml")
    assert b.periods > 1
    assert type_start(b) is None
