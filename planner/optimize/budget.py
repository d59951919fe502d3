"""A run's solving time: every solve of a run (the plan, its tie-breaks, a diagnosis,
explanations) shares one budget (``run_budget``), so ``--time-limit`` bounds the whole run, not
each solve. Its deterministic seconds keep plans reproducible; a wall-clock deadline
(``WALL_FACTOR`` x the limit + ``WALL_GRACE_S``) makes sure the run ends on a slow or loaded
machine, and, with ``alarm``, cuts the work around the solver too (option enumeration, model
building) by raising ``OutOfTime``.

Apart from the solver (``planner.optimize.solve``) so that a command can open its run before
OR-Tools is imported: the import then overlaps the option enumeration's workers.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from planner.errors import OutOfTime

# The run's wall-clock deadline: one deterministic second took 1.5-3 wall seconds on a loaded
# 2-core machine (benchmarks/README.md; 4-5 with other test runs beside it), and options and
# model building come on top. A run with ``--time-limit 60`` ends within about 100 s.
WALL_FACTOR = 1.5
WALL_GRACE_S = 10.0
ALARM_GRACE_S = 1.0  # the solver stops itself at the deadline; the alarm is for the Python around it
ALARM_EVERY_S = 0.5  # after the deadline, until a section that may be cut is reached
MIN_SOLVE_S = 0.001  # less than this left: no solve is started


@dataclass
class Budget:
    """What is left of a run's solving time."""

    deterministic_s: float  # shared by every solve of the run
    deadline: float  # time.monotonic(): every solve stops by then
    settled: bool = False  # the run has its answer (a plan, or infeasibility proven)
    cuttable: int = 0  # depth of sections after the answer that the deadline may still cut short

    def wall_left(self) -> float:
        return self.deadline - time.monotonic()

    def spent(self) -> bool:
        return self.deterministic_s < MIN_SOLVE_S or self.wall_left() <= 0


_budget: Budget | None = None


@contextmanager
def run_budget(time_limit_s: float | None, alarm: bool = False) -> Iterator[Budget | None]:
    """Solves inside share ``time_limit_s`` deterministic seconds and stop by the run's deadline.

    Without a limit, or inside a run that already has a budget, nothing changes (each solve has
    its own limit). ``alarm`` (the command line, main thread only): after the deadline, SIGALRM
    raises ``OutOfTime`` wherever the run is until it has its answer (``settle``), and after
    that only inside ``cuttable()`` sections.
    """
    global _budget
    if time_limit_s is None or _budget is not None:
        yield _budget
        return
    wall = WALL_FACTOR * time_limit_s + WALL_GRACE_S
    _budget = Budget(deterministic_s=time_limit_s, deadline=time.monotonic() + wall)
    armed = alarm and threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGALRM, _on_alarm) if armed else None
    if armed:
        signal.setitimer(signal.ITIMER_REAL, wall + ALARM_GRACE_S, ALARM_EVERY_S)
    try:
        yield _budget
    finally:
        if armed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, signal.SIG_DFL if previous is None else previous)
        _budget = None


def detach_budget() -> None:
    """In a worker process forked inside a run: its solves keep to their own limits, the same
    whichever worker takes which job (the parent still ends the run at its deadline)."""
    global _budget
    _budget = None


def _on_alarm(signum: int, frame: Any) -> None:
    if _budget is not None and (not _budget.settled or _budget.cuttable):
        raise OutOfTime()


def settle() -> None:
    """The run has its answer: the deadline no longer ends it (its solves still stop by then).

    A solve that finds a plan or proves infeasibility settles the run itself, from the solver's
    thread, before the waiting thread could be interrupted."""
    if _budget is not None:
        _budget.settled = True


@contextmanager
def cuttable() -> Iterator[None]:
    """A section after the answer that the deadline may cut short with ``OutOfTime`` (a diagnosis,
    explanations): the caller catches it outside the section and keeps what it has."""
    if _budget is None:
        yield
        return
    budget = _budget
    budget.cuttable += 1
    try:
        yield
    finally:
        budget.cuttable -= 1


def budget_spent() -> bool:
    """Whether the run's budget ran out (a solve may have stopped short of its answer)."""
    return _budget is not None and _budget.spent()


def current() -> Budget | None:
    """The budget of the run under way (None: each solve keeps to its own limit)."""
    return _budget
