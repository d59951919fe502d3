"""Work the caller waits for in short slices: a CP-SAT search here or in a child process.

The work runs in a helper thread while the calling thread waits on an event, so Ctrl-C (or the
run's deadline, ``OutOfTime``) reaches the caller at once instead of when the work returns. Then
the work is asked to stop, again each slice until it has (a search still starting up may miss
the first request); at the deadline what it found is kept, any other exception is raised again
once the work has ended.

The wait is on an event, not ``Thread.join``: in Python 3.11 a join interrupted by Ctrl-C can mark
a running thread as stopped, and the interpreter then exits under a running solver (abort).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from ortools.sat.python import cp_model

from planner.errors import OutOfTime
from planner.optimize.budget import settle

T = TypeVar("T")
POLL_S = 0.1  # how often a waiting thread looks for Ctrl-C or the deadline
ANSWERED = (cp_model.OPTIMAL, cp_model.FEASIBLE, cp_model.INFEASIBLE)


def waited(work: Callable[[], T], stop: Callable[[], None], name: str, abandon: Callable[[], None] | None = None) -> T:
    """``work()`` in a helper thread named ``name``; ``stop()`` asks it to end early with what it
    has, ``abandon()`` (default: ``stop``) to end before an exception is raised again."""
    box: dict[str, Any] = {}
    done = threading.Event()

    def run() -> None:
        try:
            box["value"] = work()
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=run, name=name, daemon=True).start()
    try:
        while not done.wait(POLL_S):
            pass
    except OutOfTime:
        _until_done(stop, done)  # the deadline: keep what the work found
    except BaseException:
        _until_done(abandon or stop, done)
        raise
    if "error" in box:
        raise box["error"]
    value: T = box["value"]
    return value


def _until_done(stop: Callable[[], None], done: threading.Event) -> None:
    """A second Ctrl-C meanwhile changes nothing: the first one is already on its way."""
    while not done.is_set():
        stop()
        with contextlib.suppress(BaseException):
            done.wait(POLL_S)


def stoppable(solver: cp_model.CpSolver, model: cp_model.CpModel) -> cp_model.CpSolverStatus:
    """``solver.solve(model)``, stopped by Ctrl-C or the deadline. A search that finds a plan or
    proves infeasibility settles the run itself, from the solver's thread, before the waiting
    thread could be interrupted."""

    def search() -> cp_model.CpSolverStatus:
        code = solver.solve(model)
        if code in ANSWERED:
            settle()
        return code

    return waited(search, solver.stop_search, "cp-sat")
