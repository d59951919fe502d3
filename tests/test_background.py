"""``executors.Background``: jobs started in a forked worker, the rest taken by the caller when
it collects; every result in the jobs' order, whoever ran it."""

from __future__ import annotations

import os
import sys

from planner import executors
from planner.executors import Background

FORKS = sys.platform.startswith("linux")


def _where(job: int) -> tuple[int, int, int]:
    return job, job * job, os.getpid()


def test_results_in_the_jobs_order_from_the_worker_and_the_caller() -> None:
    jobs = list(range(40))
    job = Background.start(_where, jobs)
    if not FORKS:
        assert job is None
        return
    assert job is not None
    found = job.result()
    assert [(j, sq) for j, sq, _ in found] == [(j, j * j) for j in jobs]  # none run twice, none skipped
    assert len({pid for _, _, pid in found}) in (1, 2)  # the worker and, for what it left, the caller


def test_a_cancelled_background_leaves_nothing_behind() -> None:
    job = Background.start(_where, list(range(5)))
    if not FORKS:
        assert job is None
        return
    assert job is not None
    token, workers = job._token, list(job._pool._processes.values())
    assert token in executors._INHERITED and workers
    job.cancel()
    assert token not in executors._INHERITED
    assert not [p.pid for p in workers if _running_child(p.pid)]  # ended by the time cancel returns


def _running_child(pid: int | None) -> bool:
    """Read from the kernel, not from the Process object: a running process forked by this one."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rpartition(")")[2].split()
    except FileNotFoundError:
        return False
    state, parent = fields[0], int(fields[1])
    return state != "Z" and parent == os.getpid()


def test_a_worker_whose_status_another_thread_took_has_ended() -> None:
    """The pool's manager thread joins its workers too: when it takes the exit status first, the
    stop must still see the worker as ended (``is_alive()`` then reads it as alive for ever)."""
    import multiprocessing

    if not FORKS:
        return
    process = multiprocessing.get_context("fork").Process(target=os._exit, args=(0,))
    process.start()
    os.waitpid(process.pid, 0)  # type: ignore[arg-type]  # the status taken behind its back
    assert process.is_alive()  # what fooled the stop before
    assert executors.ended(process)
    running = multiprocessing.get_context("fork").Process(target=_sleep)
    running.start()
    try:
        assert not executors.ended(running)
    finally:
        running.kill()
        running.join()
    assert executors.ended(running)


def _sleep() -> None:
    import time

    time.sleep(30)


def _report_collector(kept: list[list[int]], conn: object) -> None:
    import gc

    executors._worker_signals()  # what every forked worker runs first
    conn.send((gc.isenabled(), len(gc.get_objects()), len(kept)))  # type: ignore[attr-defined]


def test_a_worker_collects_its_own_objects_whatever_the_parent_had() -> None:
    """The command line forks the options' worker with collections off: a worker turns them on,
    and what it was forked with is frozen (not walked by its collections)."""
    import gc
    import multiprocessing

    if not FORKS:
        return
    context = multiprocessing.get_context("fork")
    kept = [[i] for i in range(50_000)]  # containers the worker inherits
    reader, writer = context.Pipe(duplex=False)
    gc.disable()
    try:
        child = context.Process(target=_report_collector, args=(kept, writer))
        child.start()
    finally:
        gc.enable()
    enabled, tracked, inherited = reader.recv()
    child.join()
    assert enabled
    assert inherited == len(kept) and tracked < len(kept)  # the inherited lists are frozen
