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
    # The pool's manager thread reaps the worker too: a join racing it may see the child's
    # status taken (ECHILD) and report it alive for a moment, so each is asked until it is
    # seen gone (a worker that truly outlived the cancel would stay: it waits for more jobs).
    for p in workers:
        for _ in range(50):
            if not p.is_alive():
                break
            p.join(0.1)
        assert not p.is_alive()


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
