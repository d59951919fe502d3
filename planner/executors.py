"""Run many independent solves: in local worker processes, or on a Ray cluster.

Both return results in the order of the jobs, so a sweep's table is the same
whichever executor ran it. Ray is optional (``pip install planner[ray]``); with
``address`` it joins an existing cluster, without it it starts a local instance.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from planner.errors import InputError

EXECUTORS = ("local", "ray")


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
    from concurrent.futures import ProcessPoolExecutor

    results = []
    with ProcessPoolExecutor(max_workers=min(workers, len(jobs))) as pool:
        for r in pool.map(fn, jobs, chunksize=1):
            results.append(r)
            if progress:
                progress()
    return results


def _ray(
    fn: Callable[[Any], Any],
    jobs: Sequence[Any],
    workers: int,
    address: str | None,
    progress: Callable[[], None] | None,
) -> list[Any]:
    try:
        import ray
    except ImportError:
        raise InputError("the Ray executor needs Ray: pip install 'planner[ray]'", key="--executor") from None
    started = False
    if not ray.is_initialized():
        if address:
            ray.init(address=address, log_to_driver=False)
        else:
            ray.init(num_cpus=max(1, workers), include_dashboard=False, log_to_driver=False)
        started = True
    try:
        remote = ray.remote(num_cpus=1)(fn)
        refs = [remote.remote(job) for job in jobs]
        index = {ref: i for i, ref in enumerate(refs)}
        results: list[Any] = [None] * len(refs)
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                results[index[ref]] = ray.get(ref)
                if progress:
                    progress()
        return results
    finally:
        if started:
            ray.shutdown()
