"""Work the caller waits for in short slices: a CP-SAT search here or in a child process, or
the services' floors solved beside the model's build.

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
from typing import Any, Generic, TypeVar

from ortools.sat.python import cp_model

from planner.errors import OutOfTime
from planner.optimize.budget import settle

T = TypeVar("T")
POLL_S = 0.1  # how often a waiting thread looks for Ctrl-C or the deadline
ANSWERED = (cp_model.OPTIMAL, cp_model.FEASIBLE, cp_model.INFEASIBLE)


class Helper(Generic[T]):
    """``work()`` in a helper thread named ``name``, from now; ``wait`` for what it returns."""

    def __init__(self, work: Callable[[], T], name: str) -> None:
        self._box: dict[str, Any] = {}
        self._done = threading.Event()

        def run() -> None:
            try:
                self._box["value"] = work()
            except BaseException as exc:  # re-raised in the caller's thread
                self._box["error"] = exc
            finally:
                self._done.set()

        threading.Thread(target=run, name=name, daemon=True).start()

    def wait(
        self, stop: Callable[[], None], abandon: Callable[[], None] | None = None, keep_at_deadline: bool = True
    ) -> T:
        """The work's value, waiting in slices. ``stop()`` asks it to end early with what it has,
        ``abandon()`` (default: ``stop``) to end before an exception is raised again; at the
        deadline (``OutOfTime``) its value is kept, or with ``keep_at_deadline`` False the deadline
        is raised again too, once the work has ended."""
        try:
            while not self._done.wait(POLL_S):
                pass
        except OutOfTime:
            _until_done(stop if keep_at_deadline else abandon or stop, self._done)
            if not keep_at_deadline:
                raise
        except BaseException:
            _until_done(abandon or stop, self._done)
            raise
        if "error" in self._box:
            raise self._box["error"]
        value: T = self._box["value"]
        return value


def waited(work: Callable[[], T], stop: Callable[[], None], name: str, abandon: Callable[[], None] | None = None) -> T:
    """``work()`` in a helper thread named ``name``, waited for (``Helper.wait``)."""
    return Helper(work, name).wait(stop, abandon)


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
