"""CP-SAT's interleaved search (several workers) in a forked child, run again when CP-SAT dies.

OR-Tools 9.13-9.15 now and then corrupt their heap in the interleaved search of models with
intervals, cumulatives and hints (google/or-tools#5048, fixed after 9.15.6755, the latest
release): the process aborts (``free(): invalid pointer``, ``munmap_chunk()``). Measured here:
bench_large seed 13 beside the test suite and the 2x fleet on an idle machine each died so, in
about 40 runs of the fleets' portfolio. In a child the crash ends the child, not the run; the
search is deterministic, so running it again gives the same answer.

The child is a fork: it has the model and the solver's parameters already. It sends back the
response in protobuf text format (doubles round-trip exactly), and the caller's solver answers
from it. Its search stops by itself at the run's deadline (``max_time_in_seconds``, set before
the fork: interval timers do not survive one). The caller waits as for a search of its own
(``optimize.stoppable``): at the run's alarm (``OutOfTime``) the child is asked to stop
(SIGUSR1) and what it found is kept; at Ctrl-C or any other error it is killed, and the error
goes on.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import signal
import sys
from collections.abc import Callable

from ortools.sat.python import cp_model
from ortools.sat.python import cp_model_helper as cmh

from planner.errors import PlannerError
from planner.optimize.budget import current, settle
from planner.optimize.stoppable import ANSWERED, stoppable, waited

ATTEMPTS = 3


def available() -> bool:
    """Forking keeps the model without copying it: Linux only (elsewhere the search stays here)."""
    return sys.platform.startswith("linux")


def search_in_child(solver: cp_model.CpSolver, model: cp_model.CpModel) -> cp_model.CpSolverStatus:
    """The search of ``stoppable`` in a child process, up to ``ATTEMPTS`` times while CP-SAT dies
    there; then ``solver`` answers as if it had searched (values, objective, bound, times)."""
    for attempt in range(1, ATTEMPTS + 1):
        budget = current()
        if attempt > 1 and budget is not None:  # the run's deadline stands: what is left of it
            solver.parameters.max_time_in_seconds = max(0.0, budget.wall_left())
        response, status = _one_attempt(solver, model)
        if response is not None:
            solver._CpSolver__response = response  # type: ignore[attr-defined]  # CpSolver has no public setter
            return response.status
        print(
            f"warning: CP-SAT died in its search ({_death(status)}, google/or-tools#5048); "
            f"running it again ({attempt} of {ATTEMPTS})",
            file=sys.stderr,
        )
    raise PlannerError(
        f"internal error: CP-SAT died {ATTEMPTS} times in the same search (google/or-tools#5048); "
        "run again, and if it keeps failing, report the problem file"
    )


# Called in the child just before its search (tests make a child die here).
before_search: Callable[[], None] = lambda: None  # noqa: E731


def _one_attempt(solver: cp_model.CpSolver, model: cp_model.CpModel) -> tuple[cmh.CpSolverResponse | None, int]:
    """The child's response, or None with its wait status when it died without one."""
    read_fd, write_fd = os.pipe()
    # the child starts with the stop signal held, until its handler is set (its default would kill it)
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read_fd)
        _child(solver, model, write_fd)
    signal.pthread_sigmask(signal.SIG_SETMASK, held)
    os.close(write_fd)

    def send(sig: signal.Signals) -> None:
        with contextlib.suppress(OSError):  # reaped already: it has ended
            os.kill(pid, sig)

    # the deadline: it stops with what it found; Ctrl-C or another error: it is killed
    return waited(
        lambda: _answer(read_fd, pid), lambda: send(signal.SIGUSR1), "cp-sat-child", lambda: send(signal.SIGKILL)
    )


def _answer(fd: int, pid: int) -> tuple[cmh.CpSolverResponse | None, int]:
    """Everything the child writes until it ends, and how it ended; a complete answer parsed,
    and the run settled by it, here in the waited thread, as a search in this process would."""
    chunks: list[bytes] = []
    try:
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    finally:
        os.close(fd)
    _, status = os.waitpid(pid, 0)
    if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 and chunks):
        return None, status
    response = cmh.CpSolverResponse()
    response.parse_text_format(b"".join(chunks).decode())
    if response.status in ANSWERED:
        settle()
    return response, status


def _child(solver: cp_model.CpSolver, model: cp_model.CpModel, write_fd: int) -> None:
    code = 70
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's: it stops this child
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        # the parent's stop: the search ends with what it found (a no-op once it has ended)
        signal.signal(signal.SIGUSR1, lambda signum, frame: solver.stop_search())
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGUSR1})
        faulthandler.disable()  # a crash here is the parent's one-line warning, not a stack dump
        before_search()
        stoppable(solver, model)
        data = str(solver.response_proto).encode()
        with os.fdopen(write_fd, "wb") as out:
            out.write(data)
        code = 0
    finally:
        os._exit(code)  # no teardown: the parent's objects are the parent's


def _death(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"signal {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exit code {os.WEXITSTATUS(status)}"
