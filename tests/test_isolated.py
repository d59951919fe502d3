"""Interleaved (several-worker) searches run in a forked child (``optimize.isolated``): the same
answer as in this process, and a child that dies is run again, a few times at most."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from ortools.sat.python import cp_model

from planner.errors import PlannerError
from planner.optimize import isolated
from planner.optimize import solve as solve_module

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the child is a fork")


def _jobs_model() -> tuple[cp_model.CpModel, list[cp_model.IntVar]]:
    """Ten jobs on a machine of capacity 3, intervals and a cumulative (as the fleets' models),
    least weighted completion time, with a hint."""
    model = cp_model.CpModel()
    ends, weights = [], []
    intervals, demands = [], []
    for j in range(10):
        start = model.new_int_var(0, 60, f"s{j}")
        size = 2 + (j * 7) % 5
        end = model.new_int_var(0, 70, f"e{j}")
        intervals.append(model.new_interval_var(start, size, end, f"i{j}"))
        demands.append(1 + j % 3)
        ends.append(end)
        weights.append(1 + (j * 3) % 4)
        model.add_hint(start, 6 * j)
    model.add_cumulative(intervals, demands, 3)
    model.minimize(sum(w * e for w, e in zip(weights, ends, strict=True)))
    return model, ends


def _answer(monkeypatch: pytest.MonkeyPatch, in_child: bool) -> tuple[object, ...]:
    monkeypatch.setattr(isolated, "available", lambda: in_child)
    model, ends = _jobs_model()
    found = solve_module._run(model, 2.0, 2)
    return found.status, found.objective, found.bound, found.deterministic_s, [found.value(e) for e in ends]


def test_the_child_answers_as_this_process_would(monkeypatch: pytest.MonkeyPatch) -> None:
    searched: list[int] = []
    monkeypatch.setattr(isolated, "before_search", lambda: searched.append(os.getpid()))
    here = _answer(monkeypatch, False)
    there = _answer(monkeypatch, True)
    assert here[0] in ("optimal", "feasible")
    assert there == here  # status, objective, bound, deterministic time, every value
    assert searched == []  # the hook ran in the child only: this process's list never grew


def test_a_child_that_dies_is_run_again(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = _answer(monkeypatch, False)
    marker = tmp_path / "died-once"

    def die_the_first_time() -> None:
        if not marker.exists():
            marker.write_text("")
            os.abort()  # as CP-SAT's heap corruption ends the process (SIGABRT)

    monkeypatch.setattr(isolated, "before_search", die_the_first_time)
    assert _answer(monkeypatch, True) == expected
    assert "CP-SAT died in its search (signal SIGABRT" in capsys.readouterr().err


def test_a_search_that_always_dies_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(isolated, "before_search", os.abort)
    with pytest.raises(PlannerError, match=f"died {isolated.ATTEMPTS} times"):
        _answer(monkeypatch, True)


def test_one_worker_searches_here(monkeypatch: pytest.MonkeyPatch) -> None:
    forks: list[int] = []
    monkeypatch.setattr(isolated, "search_in_child", lambda *a: forks.append(1))
    model, _ = _jobs_model()
    assert solve_module._run(model, 1.0, 1).status in ("optimal", "feasible")
    assert forks == []
