"""The services' floors are solved in a thread beside the rest of the build
(``optimize.floors.start_service_floors``): what they find, and what goes wrong there, must
reach the build as if they were solved in turn."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.context import prepare
from planner.io.problem_io import load_problem
from planner.optimize import floors
from planner.optimize.model import build
from planner.perf.memo import Memo

ROOT = Path(__file__).resolve().parent.parent


def test_a_floor_that_fails_in_its_thread_fails_the_build(monkeypatch: pytest.MonkeyPatch) -> None:
    ctx = prepare(load_problem(ROOT / "problems" / "startup.yaml"))

    def failing(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the floor's solve failed")

    monkeypatch.setattr(floors, "service_floor", failing)
    with pytest.raises(RuntimeError, match="the floor's solve failed"):
        build(ctx.problem, ctx.catalog, ctx.workloads)


def test_the_floor_cut_is_the_service_solved_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """startup's chat: the cut the build adds is the proven least cost of the service alone,
    solved again here in this thread with the floor's own model."""
    monkeypatch.setattr(floors, "_FLOORS", Memo(100))  # solved anew, not read from an earlier test
    ctx = prepare(load_problem(ROOT / "problems" / "startup.yaml"))
    b = build(ctx.problem, ctx.catalog, ctx.workloads)
    chat = b.floors["chat"]
    assert chat.found is not None
    again = floors.solve_alone(chat, "chat", floors.FLOOR_DET_S)
    assert again is not None and again[0] == chat.found[0]
    cut = [c for c in b.model.proto.constraints if c.name == "service:chat:floor"]
    assert len(cut) == 1 and cut[0].linear.domain[0] == chat.found[0]
