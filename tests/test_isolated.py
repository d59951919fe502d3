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


def _hard_model() -> cp_model.CpModel:
    """Forty jobs on a machine of capacity 4: a plan at once, no proof for a long while."""
    model = cp_model.CpModel()
    intervals, demands, ends, weights = [], [], [], []
    for j in range(40):
        start, size = model.new_int_var(0, 400, f"s{j}"), 3 + (j * 7) % 10
        end = model.new_int_var(0, 420, f"e{j}")
        intervals.append(model.new_interval_var(start, size, end, f"i{j}"))
        demands.append(1 + (j * 5) % 3)
        ends.append(end)
        weights.append(1 + (j * 11) % 9)
    model.add_cumulative(intervals, demands, 4)
    model.minimize(sum(w * e for w, e in zip(weights, ends, strict=True)))
    return model


def test_the_runs_alarm_stops_the_child_with_what_it_found(monkeypatch: pytest.MonkeyPatch) -> None:
    """The run's alarm (``OutOfTime``, repeated) while the child searches: the child is asked to
    stop (SIGUSR1) and its plan is kept, as a search in this process would keep it."""
    import signal

    from planner.errors import OutOfTime

    asked: list[int] = []
    kill = os.kill
    monkeypatch.setattr(os, "kill", lambda pid, sig: (asked.append(sig), kill(pid, sig)))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 2
    solver.parameters.interleave_search = True
    solver.parameters.max_time_in_seconds = 120.0  # only if the stop were lost

    def alarm(signum: int, frame: object) -> None:
        raise OutOfTime()

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, 1.0, 0.5)
    try:
        code = isolated.search_in_child(solver, _hard_model())
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert signal.SIGUSR1 in asked
    assert code == cp_model.FEASIBLE and len(solver.response_proto.solution) > 0
    assert solver.wall_time < 60  # it stopped when asked, not at its own limit
