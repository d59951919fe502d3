"""Ctrl-C and SIGTERM on the command line: always an interrupt, never lost, never half a write.

``route()`` blocks SIGINT and SIGTERM in the main thread, so in every thread and worker process
started after it, and one waiter thread takes them with ``sigwait``. A solver cannot swallow
them (CP-SAT installs its own SIGINT handler during a solve and leaves SIGINT at its default
action afterwards), nor can a worker process die of one before the parent decides. The waiter
raises the signal in the main thread as ``KeyboardInterrupt`` (SIGINT) or ``Interrupted``
(SIGTERM); every wait of the run is in short slices, so it is seen at once. Inside ``held()``
(the renames that put a set of output files in place), a signal waits until the set is done.

Exit codes: ``128 + signal``, so 130 for Ctrl-C and 143 for SIGTERM.
"""

from __future__ import annotations

import _thread
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from planner.errors import Interrupted


@dataclass
class _State:
    lock: threading.Lock = field(default_factory=threading.Lock)
    routed: set[signal.Signals] = field(default_factory=set)  # taken by the waiter thread
    started: bool = False
    held: int = 0  # depth of held() sections
    pending: int | None = None  # a signal that arrived inside one
    last: int | None = None  # the last signal taken (Ray turns any interrupt into a plain KeyboardInterrupt)


_state = _State()


def route() -> None:
    """Take SIGINT and SIGTERM through the waiter thread (call first, from the main thread).

    A signal the parent made us ignore stays ignored (``nohup``, a background job of a script)."""
    if _state.started or threading.current_thread() is not threading.main_thread():
        return
    _state.started = True
    _state.routed = {s for s in (signal.SIGINT, signal.SIGTERM) if signal.getsignal(s) != signal.SIG_IGN}
    if not _state.routed:
        return
    if signal.SIGTERM in _state.routed:
        signal.signal(signal.SIGTERM, _raise_interrupted)
    signal.pthread_sigmask(signal.SIG_BLOCK, _state.routed)
    threading.Thread(target=_wait, name="signals", daemon=True).start()


def _wait() -> None:
    while True:
        signum = signal.sigwait(_state.routed)
        _state.last = signum
        with _state.lock:
            if _state.held:
                _state.pending = signum
                continue
        _thread.interrupt_main(signal.Signals(signum))


def _raise_interrupted(signum: int, frame: Any) -> None:
    raise Interrupted(signum)


def exit_code(exc: KeyboardInterrupt) -> int:
    """128 + the signal: 130 for Ctrl-C, 143 for SIGTERM."""
    if isinstance(exc, Interrupted):
        return 128 + exc.signum
    return 128 + (_state.last or signal.SIGINT)


@contextmanager
def held() -> Iterator[None]:
    """Signals wait until the block is done (a set of outputs renamed into place, all of it)."""
    with _state.lock:
        _state.held += 1
    try:
        yield
    finally:
        with _state.lock:
            _state.held -= 1
            signum, _state.pending = (_state.pending, None) if not _state.held else (None, _state.pending)
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        if signum is not None:
            raise Interrupted(signum)
