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
the fork: interval timers do not survive one). The run's alarm (``OutOfTime``) while waiting:
the child is asked to stop (SIGUSR1) and what it found is kept, as a search in this process
would. Ctrl-C or any other error while waiting: the child is killed and the error goes on.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import signal
import sys
import threading
from collections.abc import Callable

from ortools.sat.python import cp_model
from ortools.sat.python import cp_model_helper as cmh

from planner.errors import OutOfTime, PlannerError
from planner.optimize.budget import current, settle

ATTEMPTS = 3
POLL_S = 0.1
_ANSWERED = (cp_model.OPTIMAL, cp_model.FEASIBLE, cp_model.INFEASIBLE)

Search = Callable[[cp_model.CpSolver, cp_model.CpModel], cp_model.CpSolverStatus]


def available() -> bool:
    """Forking keeps the model without copying it: Linux only (elsewhere the search stays here)."""
    return sys.platform.startswith("linux")


def search_in_child(solver: cp_model.CpSolver, model: cp_model.CpModel, search: Search) -> cp_model.CpSolverStatus:
    """``search(solver, model)`` in a child process, up to ``ATTEMPTS`` times while CP-SAT dies
    there; then ``solver`` answers as if it had searched (values, objective, bound, times)."""
    for attempt in range(1, ATTEMPTS + 1):
        budget = current()
        if attempt > 1 and budget is not None:  # the run's deadline stands: what is left of it
            solver.parameters.max_time_in_seconds = max(0.0, budget.wall_left())
        text, status = _one_attempt(solver, model, search)
        if text is not None:
            response = cmh.CpSolverResponse()
            response.parse_text_format(text)
            solver._CpSolver__response = response  # type: ignore[attr-defined]  # CpSolver has no public setter
            if response.status in _ANSWERED:
                settle()
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


def _one_attempt(solver: cp_model.CpSolver, model: cp_model.CpModel, search: Search) -> tuple[str | None, int]:
    """The child's response as text, or None with its wait status when it died without one."""
    read_fd, write_fd = os.pipe()
    # the child starts with the stop signal held, until its handler is set (its default would kill it)
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read_fd)
        _child(solver, model, search, write_fd)
    signal.pthread_sigmask(signal.SIG_SETMASK, held)
    os.close(write_fd)
    try:
        data = _read_all(read_fd, pid)
    except BaseException:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise
    _, status = os.waitpid(pid, 0)
    ok = os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 and data
    return (data.decode() if ok else None), status


def _child(solver: cp_model.CpSolver, model: cp_model.CpModel, search: Search, write_fd: int) -> None:
    code = 70
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's: it kills this child
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        # the parent's stop: the search ends with what it found (a no-op once it has ended)
        signal.signal(signal.SIGUSR1, lambda signum, frame: solver.stop_search())
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGUSR1})
        faulthandler.disable()  # a crash here is the parent's one-line warning, not a stack dump
        before_search()
        search(solver, model)
        data = str(solver.response_proto).encode()
        with os.fdopen(write_fd, "wb") as out:
            out.write(data)
        code = 0
    finally:
        os._exit(code)  # no teardown: the parent's objects are the parent's


def _read_all(fd: int, pid: int) -> bytes:
    """Everything the child writes, until it closes the pipe (the pipe is closed here then).

    A helper thread reads: the run's alarm raises ``OutOfTime`` in this thread only, between
    waits, and a chunk read is never lost to it. The alarm asks the child to stop; any other
    exception (Ctrl-C) goes to the caller, which kills the child, so the reader ends too."""
    box: dict[str, bytes | BaseException] = {}
    done = threading.Event()

    def read() -> None:
        chunks: list[bytes] = []
        try:
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
            box["data"] = b"".join(chunks)
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc
        finally:
            os.close(fd)
            done.set()

    threading.Thread(target=read, name="cp-sat-child", daemon=True).start()
    while True:
        try:
            if done.wait(POLL_S):
                break
        except OutOfTime:  # the run's alarm, again each few seconds until the child answers
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGUSR1)
    error = box.get("error")
    if isinstance(error, BaseException):
        raise error
    data = box["data"]
    assert isinstance(data, bytes)
    return data


def _death(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"signal {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exit code {os.WEXITSTATUS(status)}"
