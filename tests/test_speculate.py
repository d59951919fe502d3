"""The simulation started on the search's first plan (``simulate.speculate``): where the plan
ends with the rows simulated, its results are the fresh simulation's, to the last digit; where
it does not, nothing of it is used."""

from __future__ import annotations

import pytest

from planner.context import Context, prepare
from planner.io.problem_io import load_problem
from planner.pipeline import plan_context
from planner.schema.plan import Plan
from planner.simulate import run as run_module
from planner.simulate.check import SOLVE_REQUESTS, check_by_simulation
from planner.simulate.speculate import Speculation
from tests.conftest import PROBLEMS


def _planned(name: str, early: Speculation | None) -> tuple[Context, Plan]:
    ctx = prepare(load_problem(PROBLEMS / name))
    return ctx, plan_context(ctx, watcher=early)


def _simulated_here(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Names of the services this process simulates from now on."""
    names: list[str] = []
    inner = run_module.simulate_service

    def counted(spec, *args, **kwargs):  # type: ignore[no-untyped-def]
        names.append(spec.name)
        return inner(spec, *args, **kwargs)

    monkeypatch.setattr(run_module, "simulate_service", counted)
    return names


def test_startups_first_plan_is_its_plan_and_its_simulation_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    early = Speculation()
    ctx, plan = _planned("startup.yaml", early)
    here = _simulated_here(monkeypatch)  # after the fork: the worker's simulations are not counted
    checked, _ = check_by_simulation(ctx, plan, False, early=early)
    assert here == []  # chat's result came from the worker
    fresh_ctx, fresh = _planned("startup.yaml", None)
    again, _ = check_by_simulation(fresh_ctx, fresh, False)
    assert here == ["chat"]
    assert checked.simulation == again.simulation and checked.simulation
    assert checked.advice == again.advice


def test_a_plan_that_moved_off_its_first_plan_is_simulated_afresh(monkeypatch: pytest.MonkeyPatch) -> None:
    # lab-train-and-serve's start types give a $821,931 plan; the search ends on $783,269
    early = Speculation()
    _, plan = _planned("lab-train-and-serve.yaml", early)
    assert early.results(plan, SOLVE_REQUESTS, 0) == {}  # the worker was stopped when the search ended


def test_a_row_unlike_the_one_simulated_is_not_taken() -> None:
    early = Speculation()
    _, plan = _planned("startup.yaml", early)
    row = plan.inference[0]
    moved = row.model_copy(update={"replicas": [r.model_copy(update={"count": r.count + 1}) for r in row.replicas]})
    other = plan.model_copy(update={"inference": [moved, *plan.inference[1:]]})
    assert early.results(other, SOLVE_REQUESTS, 0) == {}


def test_results_for_other_requests_or_seed_are_not_taken() -> None:
    early = Speculation()
    _, plan = _planned("startup.yaml", early)
    assert early.results(plan, SOLVE_REQUESTS, seed=1) == {}
    early = Speculation()
    _, plan = _planned("startup.yaml", early)
    assert set(early.results(plan, SOLVE_REQUESTS, seed=0)) == {"chat"}


def test_a_fleet_is_not_simulated_early(monkeypatch: pytest.MonkeyPatch) -> None:
    from planner.optimize import floors

    monkeypatch.setattr(floors, "FLEET_SERVICES", 1)  # startup's one service counts as a fleet
    early = Speculation()
    _, plan = _planned("startup.yaml", early)
    assert early._job is None
    assert early.results(plan, SOLVE_REQUESTS, 0) == {}


def test_services_known_already_are_not_simulated_again(monkeypatch: pytest.MonkeyPatch) -> None:
    ctx, plan = _planned("inference-tight-power.yaml", None)
    assert ctx.loaded is not None
    fresh = run_module.simulate_plan(plan, ctx.loaded, ctx.catalog, requests=2_000, seed=3)
    simulated = [i for i, r in enumerate(fresh) if r.holds is not None]
    assert len(simulated) >= 2
    first = fresh[simulated[0]]
    here = _simulated_here(monkeypatch)
    again = run_module.simulate_plan(plan, ctx.loaded, ctx.catalog, requests=2_000, seed=3, known={first.name: first})
    assert again[simulated[0]] is first
    assert here == [fresh[i].name for i in simulated[1:]]

    def content(results: list[run_module.ServiceResult]) -> list[tuple[object, ...]]:
        return [(r.name, r.row, r.holds, r.buckets) for r in results]  # all but the wall time

    assert content(again) == content(fresh)  # every other service on its own random stream, as before
