"""Run many independent solves: in local worker processes, or on a Ray cluster.

Both return results in the order of the jobs, so a sweep's table is the same
whichever executor ran it. Ray is optional (``pip install planner[ray]``); with
``address`` it joins an existing cluster, without it it starts a local instance.

Workers leave signals to the parent: Ctrl-C reaches the whole process group, but a worker
ignores it, and the parent, interrupted while it waits (in short slices, so it notices at
once), terminates every worker before the interrupt goes on. No worker outlives the run.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import socket
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from planner.errors import InputError

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor
    from multiprocessing.process import BaseProcess

EXECUTORS = ("local", "ray")
POLL_S = 0.2  # how often a waiting parent looks for Ctrl-C
STOP_WAIT_S = 2.0  # a worker that has not ended this long after SIGTERM is killed
CONNECT_TIMEOUT_S = 5.0  # a Ray address must answer within this (name lookup, then TCP connect)
RAY_LOCAL_ADDRESSES = ("auto", "local")  # ray.init's own words, not HOST:PORT


def map_ordered(
    fn: Callable[[Any], Any],
    jobs: Sequence[Any],
    workers: int = 1,
    executor: str = "local",
    address: str | None = None,
    progress: Callable[[], None] | None = None,
) -> list[Any]:
    if executor not in EXECUTORS:
        raise InputError(f"unknown executor {executor!r}", key="--executor", hint=f"one of {', '.join(EXECUTORS)}")
    if executor == "ray":
        return _ray(fn, jobs, workers, address, progress)
    if workers <= 1 or len(jobs) <= 1:
        out = []
        for job in jobs:
            out.append(fn(job))
            if progress:
                progress()
        return out
    return _local(fn, jobs, workers, progress)


def _local(
    fn: Callable[[Any], Any], jobs: Sequence[Any], workers: int, progress: Callable[[], None] | None
) -> list[Any]:
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(max_workers=min(workers, len(jobs)), initializer=_worker_signals)
    try:
        futures = [pool.submit(fn, job) for job in jobs]
        results = []
        for future in futures:
            results.append(_result(future))
            if progress:
                progress()
    except BaseException:  # Ctrl-C, SIGTERM, the deadline, a failed job: no worker goes on
        _stop(pool)
        raise
    pool.shutdown()
    return results


@contextlib.contextmanager
def started_map(fn: Callable[[Any], Any], jobs: Sequence[Any], workers: int) -> Iterator[Callable[[], list[Any]]]:
    """``map_ordered`` over local worker processes, started now and collected later: the caller
    works meanwhile, then calls what is yielded (the results in the order of the jobs). For
    short jobs (a fraction of a second each): workers are forked, a copy of this process
    ready at once. ``workers`` counts this process: ``workers - 1`` are forked, and this one takes
    the jobs none has taken yet when it collects (startup: its options' two workers and the
    command line's imports were three processes on two cores, now two; a simulation's parent
    replays a share instead of waiting for two workers). Elsewhere than Linux (macOS and Windows
    start a fresh interpreter per worker, which costs more than such jobs save), with one worker,
    or inside a worker already, the jobs run here when collected."""
    import multiprocessing
    import sys

    forks = sys.platform.startswith("linux")
    if workers < 2 or len(jobs) < 2 or multiprocessing.parent_process() is not None or not forks:
        yield lambda: [fn(job) for job in jobs]
        return
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("fork")
    count = min(workers, len(jobs)) - 1  # and this process
    pool = ProcessPoolExecutor(max_workers=count, mp_context=context, initializer=_worker_signals)
    # The workers fork at the first submit, holding the jobs already: no job is pickled (a
    # simulation's replicas share 1.2 MB of requests; the parent pickled them before any worker
    # could start, and each worker unpickled them again). Each worker takes the next job itself
    # (a shared counter) and sends its results once, at the end: the parent, busy meanwhile (its
    # own imports hold the interpreter's lock), need not hand out jobs nor read results on time
    # (startup's options: workers waited 0.2 s between jobs while the parent imported OR-Tools).
    token = next(_MAPS)
    _INHERITED[token] = (fn, jobs, context.Value("q", 0))
    try:
        futures = [pool.submit(_inherited, token) for _ in range(count)]
        yield lambda: _in_order(len(jobs), [_inherited(token), *(_result(f) for f in futures)])
    except BaseException:  # Ctrl-C, the deadline, a failed job: no worker goes on
        _stop(pool)
        raise
    finally:
        del _INHERITED[token]
    pool.shutdown()


class Background:
    """Jobs in a forked worker process, started now, while the caller goes on (its threads may
    run native code meanwhile: a solver). ``result()`` runs here the jobs the worker has not
    taken yet (this process is free by then: its core is shared out), then returns every
    result in the jobs' order; ``cancel()`` ends the worker unread; one of them must be called.
    None from ``start`` where forking is not how workers start (macOS, Windows) or inside a
    worker already: the jobs are then not worth starting early."""

    def __init__(self, pool: ProcessPoolExecutor, future: Future[Any], token: int, count: int) -> None:
        self._pool, self._future, self._token, self._count = pool, future, token, count

    @classmethod
    def start(cls, fn: Callable[[Any], Any], jobs: Sequence[Any]) -> Background | None:
        import multiprocessing
        import sys

        if not sys.platform.startswith("linux") or multiprocessing.parent_process() is not None:
            return None
        from concurrent.futures import ProcessPoolExecutor

        context = multiprocessing.get_context("fork")
        pool = ProcessPoolExecutor(max_workers=1, mp_context=context, initializer=_worker_signals)
        token = next(_MAPS)
        _INHERITED[token] = (fn, list(jobs), context.Value("q", 0))  # forked with the jobs: nothing pickled
        return cls(pool, pool.submit(_inherited, token), token, len(jobs))

    def result(self) -> list[Any]:
        try:
            mine = _inherited(self._token)
            theirs = _result(self._future)
        except BaseException:  # Ctrl-C, a failed job: the worker goes no further
            self.cancel()
            raise
        _INHERITED.pop(self._token, None)
        self._pool.shutdown()
        return _in_order(self._count, [mine, theirs])

    def cancel(self) -> None:
        _INHERITED.pop(self._token, None)
        _stop(self._pool)


# started_map's jobs by map, for its forked workers to read (their copy of the parent's memory),
# with the index of the next job no worker has taken (shared)
_INHERITED: dict[int, tuple[Callable[[Any], Any], Sequence[Any], Any]] = {}
_MAPS = itertools.count()


def _inherited(token: int) -> list[tuple[int, Any]]:
    """In a forked worker (or in the parent, once it collects): the jobs of map ``token``, as the
    parent held them when it forked, each taken when this process is free, as (index, result)."""
    fn, jobs, taken = _INHERITED[token]
    done: list[tuple[int, Any]] = []
    while True:
        with taken.get_lock():
            i = taken.value
            taken.value = i + 1
        if i >= len(jobs):
            return done
        done.append((i, fn(jobs[i])))


def _in_order(count: int, parts: list[list[tuple[int, Any]]]) -> list[Any]:
    results: list[Any] = [None] * count
    for part in parts:
        for i, result in part:
            results[i] = result
    return results


@contextlib.contextmanager
def worker_pool(
    workers: int, setup: Callable[[], None] | None = None
) -> Iterator[Callable[[Callable[[Any], Any], Sequence[Any]], list[Any]]]:
    """A map over local worker processes that live for the whole block (what each worker has
    prepared, it keeps between maps); in order, as ``map_ordered``. ``setup`` runs first in each
    worker. One worker, or inside a worker already: the jobs run here."""
    import multiprocessing

    if workers < 2 or multiprocessing.parent_process() is not None:
        yield lambda fn, jobs: [fn(job) for job in jobs]
        return
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(max_workers=workers, initializer=_worker_init, initargs=(setup,))

    def run(fn: Callable[[Any], Any], jobs: Sequence[Any]) -> list[Any]:
        return [_result(f) for f in [pool.submit(fn, job) for job in jobs]]

    try:
        yield run
    except BaseException:  # Ctrl-C, the deadline, a failed job: no worker goes on
        _stop(pool)
        raise
    pool.shutdown()


def _worker_init(setup: Callable[[], None] | None) -> None:
    _worker_signals()
    if setup is not None:
        setup()


def _worker_signals() -> None:
    """In each worker: Ctrl-C is the parent's to handle (blocked, so that a solver installing its
    own SIGINT handler cannot take it either); SIGTERM, the parent's stop, ends the worker at once.
    And the collector runs, as in any process (the command line forks the options' workers while
    it has collections off), on the worker's own objects: those it was forked with are the
    parent's, frozen (startup's options worker spent 0.02-0.03 s collecting them at first)."""
    import gc

    gc.freeze()
    gc.enable()
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})


def _result(future: Future[Any]) -> Any:
    """The job's result, waiting in slices: a signal is handled between them, not after the job."""
    while True:
        try:
            return future.result(timeout=POLL_S)
        except TimeoutError:
            continue


def _stop(pool: ProcessPoolExecutor) -> None:
    """Terminate every worker now (Python 3.11 has no public way: ``terminate_workers`` is 3.14)."""
    processes = list((pool._processes or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()
    for process in processes:
        process.join(STOP_WAIT_S)
        if not ended(process):
            process.kill()
            process.join()


def ended(process: BaseProcess) -> bool:
    """Whether a worker has ended. ``is_alive()`` alone cannot say once another thread took the
    exit status (the pool's manager thread joins its workers too): it then reads "no such
    child" as alive for ever (1 in 100-300 cancels on Linux 6.18 with two threads joining)."""
    if process.exitcode is not None or process.pid is None:
        return True
    try:
        os.kill(process.pid, 0)
    except (ProcessLookupError, PermissionError):  # reaped, or its pid another user's process now
        return True
    return False


def check_address(address: str | None) -> None:
    """A Ray address that does not answer is an input error within seconds (``ray.init`` would
    wait far longer, and Ray may take seconds just to import). HOST:PORT, optionally ray://."""
    if address is None or address in RAY_LOCAL_ADDRESSES:
        return
    host, _, port_text = address.removeprefix("ray://").rpartition(":")
    host = host.strip("[]")
    if not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise InputError(f"expected HOST:PORT, got {address!r}", key="--address", hint="e.g. 10.0.0.5:6379")
    try:
        _connect(host, int(port_text))
    except OSError as exc:
        reason = exc.strerror or str(exc) or "no answer"
        raise InputError(
            f"no Ray cluster answers at {address} ({reason})",
            key="--address",
            hint="start one with `ray start --head`, or check the host and port",
        ) from None


def _connect(host: str, port: int) -> None:
    """Open and close a TCP connection, name lookup included, within ``CONNECT_TIMEOUT_S`` each."""
    found: list[Any] = []

    def lookup() -> None:
        try:
            found.append(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except OSError as exc:
            found.append(exc)

    thread = threading.Thread(target=lookup, name="ray-address", daemon=True)  # getaddrinfo has no timeout
    thread.start()
    thread.join(CONNECT_TIMEOUT_S)
    if not found:
        raise TimeoutError(f"the name {host} did not resolve in {CONNECT_TIMEOUT_S:g} s")
    if isinstance(found[0], OSError):
        raise found[0]
    family, kind, proto, _, sockaddr = found[0][0]
    with socket.socket(family, kind, proto) as sock:
        sock.settimeout(CONNECT_TIMEOUT_S)
        sock.connect(sockaddr)


def _ray(
    fn: Callable[[Any], Any],
    jobs: Sequence[Any],
    workers: int,
    address: str | None,
    progress: Callable[[], None] | None,
) -> list[Any]:
    check_address(address)
    try:
        import ray
    except ImportError:
        raise InputError("the Ray executor needs Ray: pip install 'planner[ray]'", key="--executor") from None
    started = False
    if not ray.is_initialized():
        with _signals_as_they_were():
            if address:
                ray.init(address=address, log_to_driver=False)
            else:
                ray.init(num_cpus=max(1, workers), include_dashboard=False, log_to_driver=False)
        started = True
    refs: list[Any] = []
    try:
        remote = ray.remote(num_cpus=1)(fn)
        refs = [remote.remote(job) for job in jobs]
        return _ray_results(ray, refs, progress)
    except BaseException:  # Ctrl-C, SIGTERM, the deadline: cancel what still runs
        for ref in refs:
            with contextlib.suppress(Exception):  # a finished task cannot be cancelled, and need not be
                ray.cancel(ref, force=True)
        raise
    finally:
        if started:
            ray.shutdown()


@contextlib.contextmanager
def _signals_as_they_were() -> Iterator[None]:
    """Around ``ray.init``. The command line blocks SIGINT and SIGTERM in its threads
    (planner.commands.signals) and processes inherit that: Ray's (raylet, workers) get the usual
    mask instead, so ``ray.shutdown`` ends them at once. Ray's driver replaces the SIGTERM handler
    with one that exits 15; ours (exit 143, after cleaning up) is put back."""
    blocked = signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    on_term = signal.getsignal(signal.SIGTERM)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        if threading.current_thread() is threading.main_thread() and on_term is not None:
            signal.signal(signal.SIGTERM, on_term)


def _ray_results(ray: Any, refs: list[Any], progress: Callable[[], None] | None) -> list[Any]:
    index = {ref: i for i, ref in enumerate(refs)}
    results: list[Any] = [None] * len(refs)
    pending = list(refs)
    while pending:
        done, pending = ray.wait(pending, num_returns=1, timeout=POLL_S)  # in slices: Ctrl-C is seen
        for ref in done:
            results[index[ref]] = ray.get(ref)
            if progress:
                progress()
    return results
