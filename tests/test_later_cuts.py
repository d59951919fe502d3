"""The fleet cuts on a small model (``Built.later_cuts``, ``solve(..., escalate=...)``): a model of
fewer services than a fleet is solved as it is first; only when its first phase ends unproven are
the closing cuts, the type-set floor and the jobs' floor added, and the search goes on from its plan.

The cuts are implied by the model, so the optimum stays; a model its first phase proves is left as
it was (startup, 0.21 det. s, would take twice as long with them)."""

from __future__ import annotations

import pytest

from planner.context import prepare
from planner.io.problem_io import load_problem
from planner.optimize import solve as solve_module
from planner.optimize.budget import run_budget
from planner.optimize.built import Built
from planner.optimize.model import build
from planner.optimize.solve import Solved
from planner.pipeline import _solved
from tests.conftest import PROBLEMS

FLEET_CUTS = ("services:type_set_floor", "jobs:floor", ":without:", ":type:")


def _solve(name: str) -> tuple[Built, Solved, int]:
    """(the built model, its least-TCO solve, its constraints before the solve)."""
    ctx = prepare(load_problem(PROBLEMS / name))
    b = build(ctx.problem, ctx.catalog, ctx.workloads)
    before = len(b.model.proto.constraints)
    with run_budget(60.0):
        solved = _solved(b, ctx.problem, 60.0, None, ties=False)
    return b, solved, before


def _fleet_cuts(b: Built) -> list[str]:
    return [c.name for c in b.model.proto.constraints if any(k in c.name for k in FLEET_CUTS)]


def test_a_model_proven_in_its_first_phase_gets_no_fleet_cut() -> None:
    b, solved, before = _solve("startup.yaml")
    assert solved.status == "optimal"
    assert b.later_cuts is not None and not b.fleet_forced  # offered, never called
    assert len(b.model.proto.constraints) == before and not _fleet_cuts(b)


def test_an_unproven_first_phase_adds_the_cuts_and_keeps_the_optimum(monkeypatch: pytest.MonkeyPatch) -> None:
    _, plain, _ = _solve("startup.yaml")
    assert plain.status == "optimal"
    # a first phase far too short to prove startup's optimum (it takes 0.21 det. s)
    monkeypatch.setattr(solve_module, "FIRST_PHASE", 0.02)
    b, escalated, before = _solve("startup.yaml")
    assert b.fleet_forced and b.later_cuts is None  # called once
    names = _fleet_cuts(b)
    assert len(b.model.proto.constraints) > before
    assert "services:type_set_floor" in names and "jobs:floor" in names
    assert escalated.status == "optimal"
    assert round(escalated.objective) == round(plain.objective) == round(escalated.bound)
