"""What-if grids over the budget solve once per group (issue 16): a plan certified for a smaller
budget is that budget's plan; every row must equal a fresh solve of its variant."""

from __future__ import annotations

import pytest

import planner.pipeline as pipeline
import planner.whatif.scenarios as scenarios
from planner.io.overrides import grid
from planner.io.problem_io import loads_problem
from planner.optimize.solve import covers
from planner.whatif.scenarios import budget_groups, run_grid, solve_budgets
from tests.test_two_stage import PROBLEM

# buying is cheaper than renting for this steady load, so a budget below the purchase rents the rest
SETS = [
    ("inference.chat.requests_per_s", [60, 120]),
    ("finance.budget_usd", [20_000, 60_000, 150_000, 400_000, 1_000_000]),
]


def test_budget_groups_put_the_largest_budget_first() -> None:
    variants = grid(SETS)
    groups = budget_groups(variants)
    assert len(groups) == 2 and sorted(i for g in groups for i in g) == list(range(len(variants)))
    for g in groups:
        budgets = [variants[i]["finance.budget_usd"] for i in g]
        assert budgets == sorted(budgets, reverse=True)
        assert len({variants[i]["inference.chat.requests_per_s"] for i in g}) == 1
    assert budget_groups([{"x": 1}, {"x": 2}]) == [[0], [1]]  # no budget swept: one job each


def test_grid_rows_equal_fresh_solves_with_fewer_solves(monkeypatch: pytest.MonkeyPatch) -> None:
    base = loads_problem(PROBLEM, "u.yaml")
    monkeypatch.setattr(scenarios, "_warm_context", None)  # fresh: no base plan to start from
    fresh = [solve_budgets(base, [v], None)[0] for v in grid(SETS)]
    solves = []
    real = pipeline.certified_plan

    def counted(ctx, time_limit_s=None):  # type: ignore[no-untyped-def]
        solves.append(ctx.problem.finance.budget_usd)
        return real(ctx, time_limit_s)

    monkeypatch.setattr(pipeline, "certified_plan", counted)
    rows = run_grid(base, SETS)
    assert rows == fresh
    assert len(solves) < len(rows)  # some budgets reused a certified plan
    # the budget binds somewhere: plans differ along a group, so reuse cannot be blind
    assert len({r["tco_usd"] for r in rows if r["inference.chat.requests_per_s"] == 120}) > 1
    assert any("budget" in r["tight"].split() for r in rows if r["status"] != "infeasible")


def test_variants_start_from_the_base_plan_and_end_on_fresh_solves_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """A grid solves its base problem first and starts each variant's search from that plan (a
    complete hint by variable name); the rows must still be the rows of unstarted solves."""
    base = loads_problem(PROBLEM, "u.yaml")
    sets = [("finance.electricity_usd_per_kwh", [0.05, 0.3]), ("inference.chat.requests_per_s", [60, 160])]
    monkeypatch.setattr(scenarios, "_warm_context", None)
    fresh = [solve_budgets(base, [v], None)[0] for v in grid(sets)]
    started = []
    real = pipeline.solve

    def recorded(model, *args, **kwargs):  # type: ignore[no-untyped-def]
        values = kwargs.get("start_values")
        started.append(values is not None and covers(model, values))
        return real(model, *args, **kwargs)

    monkeypatch.setattr(pipeline, "solve", recorded)
    rows = run_grid(base, sets)
    assert rows == fresh
    assert scenarios._warm_context is not None and scenarios._warm_context[1].start
    # the base's own solve, then every variant's, each model with the base plan's variables
    assert len(started) == 1 + len(rows) and not started[0] and all(started[1:])


def test_a_start_missing_a_variable_is_not_given() -> None:
    from ortools.sat.python import cp_model

    from planner.optimize.solve import solve

    model = cp_model.CpModel()
    x, y = model.new_int_var(0, 5, "x"), model.new_int_var(0, 5, "y")
    model.add(x + y >= 3)
    model.minimize(2 * x + 3 * y)
    assert covers(model, {"x": 3, "y": 0}) and not covers(model, {"x": 3})
    # a start never changes the optimum: complete, partial (not given), infeasible, out of the domains
    for values in ({"x": 3, "y": 0}, {"x": 3}, {"x": 0, "y": 1}, {"x": 99, "y": -4}):
        solved = solve(model, 5.0, start_values=values)
        assert solved.status == "optimal" and solved.objective == 6
    assert not model.proto.solution_hint.vars  # hints are cleared after the solve
