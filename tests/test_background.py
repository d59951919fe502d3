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
    assert not any(p.is_alive() for p in workers)
