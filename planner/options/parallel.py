"""Every workload's options, in worker processes when there is enough to estimate.

A service's options on one pool (chassis and GPU) are independent of every other pool's and
service's, and each takes a rate search per size and precision: on most problems the
enumeration is the longest step before the solver starts. The (service, pool) pairs are split
in a few parts per worker; workers take the parts as they are free and return the options with
the estimates they made: the parent keeps them, so later enumerations in the same run (a
diagnosis, explanations, what-if variants) reuse them as if it had made them itself. The workers
start first and the caller works meanwhile (the command line imports the solver), then sizes the
training jobs (a chain's jobs are sized in order) and takes the parts left; the result is the
same as one process's, only sooner.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

from planner.bom import PoolKey
from planner.catalog import Catalog
from planner.options.disagg import kv_routes
from planner.options.inference import (
    WIDE_EP_IN_PLANS,
    inference_options,
    joined_options,
    pool_options,
    service_pools,
)
from planner.options.types import PoolLimit, WorkloadOptions
from planner.perf import kept_estimates
from planner.schema.problem import InferenceService

# (service, pool) pairs with a model to estimate; fewer: starting workers costs more than it
# saves (about 70 ms on 2 cores; startup's 58 pairs take 4 ms each on average)
PARALLEL_FROM_PAIRS = 24
PARTS_PER_WORKER = 3

Task = tuple[int, int]  # (index of the service, index of the pool in ``service_pools``)


@contextmanager
def workload_options(
    services: list[InferenceService],
    catalog: Catalog,
    limit: PoolLimit,
    training: Callable[[PoolLimit], list[WorkloadOptions]],
) -> Iterator[Callable[[], tuple[list[WorkloadOptions], list[WorkloadOptions]]]]:
    """Start enumerating the training jobs' options (``training``, one job: a chain's jobs are
    sized in order) and the services'; the call yielded waits for them: (jobs', services')."""
    pools = service_pools(catalog)
    workers = min(os.cpu_count() or 1, len(pools) * len(services) + 1)
    modelled = sum(s.model is not None for s in services) * len(pools)
    if modelled < PARALLEL_FROM_PAIRS or workers < 2 or multiprocessing.parent_process() is not None:

        def alone() -> tuple[list[WorkloadOptions], list[WorkloadOptions]]:
            kept_estimates.load()
            return training(limit), [inference_options(svc, catalog, limit) for svc in services]

        yield alone
        return
    from planner.executors import started_map

    limits = {key: limit(key) for key in _pool_keys(catalog)}
    tasks = [(s, p) for s in range(len(services)) for p in range(len(pools))]
    # the pairs in a few parts per worker, taken by whichever worker is free: pools differ
    # (startup's even-numbered pools took twice the odd ones' time)
    parts = PARTS_PER_WORKER * workers
    jobs: list[Job] = [(services, catalog, limits, tasks[k::parts]) for k in range(parts)]
    # The training jobs are sized here, meanwhile (nothing of theirs pickled: startup's options
    # 0.29 MB, their estimates 0.54 MB), unless this file's estimates are kept from its last run:
    # then a worker is done with the pairs while this process still imports, and sizes them too.
    early = kept_estimates.expected()
    if early:
        jobs.append(partial(training, limit))
    with started_map(_options_of, jobs, workers) as collect:

        def joined() -> tuple[list[WorkloadOptions], list[WorkloadOptions]]:
            trained = [] if early else training(limit)
            done = collect()
            if early:
                trained, made = done.pop()
                kept_estimates.add(made)
            parts: dict[Task, WorkloadOptions] = {}
            for part, made in done:
                parts.update(part)
                kept_estimates.add(made)
            served = [
                joined_options(svc, catalog, [parts[s, p] for p in range(len(pools))]) for s, svc in enumerate(services)
            ]
            return trained, served

        yield joined


def _pool_keys(catalog: Catalog) -> set[PoolKey]:
    """Every pool a service's options may name: each chassis and GPU, and the pools
    disaggregated phases may live on."""
    keys = {PoolKey(chassis.id, gpu, "none") for chassis in catalog.servers.values() for gpu in chassis.gpus}
    return keys | {
        key
        for chassis in catalog.servers.values()
        for gpu in chassis.gpus
        for key, _, _ in kv_routes(catalog, chassis, catalog.gpus[gpu])
    }


Part = tuple[list[InferenceService], Catalog, dict[PoolKey, tuple[int, str]], list[Task]]
Job = Part | Callable[[], list[WorkloadOptions]]  # some services on some pools, or the training jobs


def _options_of(job: Job) -> tuple[Any, kept_estimates.Made]:
    """In a worker, or in this process once it collects: some services' options on some pools,
    or the training jobs', with the estimates made (the parent keeps them)."""
    if callable(job):
        with kept_estimates.recording() as made:
            return job(), made
    kept_estimates.load()
    services, catalog, limits, tasks = job
    pools = service_pools(catalog)
    with kept_estimates.recording() as made:
        done = {
            (s, p): pool_options(services[s], catalog, *pools[p], limits.__getitem__, WIDE_EP_IN_PLANS)
            for s, p in tasks
        }
    return done, made
