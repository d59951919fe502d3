"""Every workload's options, with worker processes: split by service when there are many
services, else by GPU beforehand (each worker enumerates every workload on its share of the
GPUs; the parent keeps their estimates, and its own enumeration then finds them made).

Each service's options are independent of the others' and take about a second to estimate
(a rate search per GPU, size and precision), so on a many-service problem the enumeration
is most of the run before the solver starts. Workers each take every ``n``-th service and
return its options in order, with the estimates they made: the parent keeps them, so later
enumerations in the same run (a diagnosis, explanations, what-if variants) reuse them as if
it had made them itself. The result is the same as one process's, only sooner.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from planner.bom import PoolKey
from planner.catalog import Catalog
from planner.options.disagg import kv_routes
from planner.options.inference import inference_options
from planner.options.types import PoolLimit, WorkloadOptions
from planner.perf import inference as perf_inference
from planner.perf import training as perf_training
from planner.schema.problem import InferenceService, Problem

PARALLEL_FROM_SERVICES = 8  # fewer: starting workers costs more than it saves
PARALLEL_FROM_GPUS = 6  # fewer services: split the GPUs instead, when there are this many
_warmed = False  # this process has split the GPUs once already
# every workload's options (``build.build_options``, passed in: it calls this module)
Enumerate = Callable[[Problem, Catalog, bool], list[WorkloadOptions]]


def service_options(services: list[InferenceService], catalog: Catalog, limit: PoolLimit) -> list[WorkloadOptions]:
    cores = os.cpu_count() or 1
    if cores < 2 or multiprocessing.parent_process() is not None or not services:
        return [inference_options(svc, catalog, limit) for svc in services]
    if len(services) < PARALLEL_FROM_SERVICES:  # estimated beforehand by GPU (``estimate_by_gpu``)
        return [inference_options(svc, catalog, limit) for svc in services]
    from planner.executors import map_ordered

    workers = min(cores, len(services))
    limits = _limits(catalog, limit)
    jobs = [(services[w::workers], catalog, limits) for w in range(workers)]
    done = map_ordered(_options_of, jobs, workers)
    out: list[WorkloadOptions | None] = [None] * len(services)
    for w, (options, made) in enumerate(done):
        for i, wo in enumerate(options):
            out[w + i * workers] = wo
        perf_inference.KEPT.remember(made)
    assert all(wo is not None for wo in out)
    return [wo for wo in out if wo is not None]


def _options_of(job: tuple[list[InferenceService], Catalog, dict[PoolKey, tuple[int, str]]]) -> tuple[Any, Any]:
    services, catalog, limits = job
    before = perf_inference.KEPT.keys()
    options = [inference_options(svc, catalog, limits.__getitem__) for svc in services]
    return options, perf_inference.KEPT.since(before)


def _limits(catalog: Catalog, limit: PoolLimit) -> dict[PoolKey, tuple[int, str]]:
    """Every pool's limit, for workers (the parent's function does not travel)."""
    keys = {PoolKey(chassis.id, gpu, "none") for chassis in catalog.servers.values() for gpu in chassis.gpus}
    keys |= {  # the pools disaggregated phases may live on
        key
        for chassis in catalog.servers.values()
        for gpu in chassis.gpus
        for key, _, _ in kv_routes(catalog, chassis, catalog.gpus[gpu])
    }
    return {key: limit(key) for key in keys}


def estimate_by_gpu(problem: Problem, catalog: Catalog, slower: bool, enumerate_all: Enumerate) -> None:
    """Few services: every workload's estimates made in workers, each enumerating the options on
    its share of the GPUs, and kept here; the enumeration that follows finds them made (the same
    answers, as the estimates are pure functions of their queries). Once per process: the first
    enumeration is the cold one; later ones (variants, explanations) mostly find their estimates
    kept already, and forking for them would cost more than it saves."""
    global _warmed
    cores = os.cpu_count() or 1
    gpus = sorted(catalog.gpus)
    if (
        _warmed
        or cores < 2
        or len(gpus) < PARALLEL_FROM_GPUS
        or len(problem.inference) >= PARALLEL_FROM_SERVICES
        or multiprocessing.parent_process() is not None
    ):
        return
    from planner.executors import map_ordered

    _warmed = True
    jobs = [(problem, _with_gpus(catalog, set(gpus[w::cores])), slower, enumerate_all) for w in range(cores)]
    for inference, training in map_ordered(_estimates_of, jobs, cores):
        perf_inference.KEPT.remember(inference)
        perf_training.KEPT.remember(training)


def _estimates_of(job: tuple[Problem, Catalog, bool, Enumerate]) -> tuple[Any, Any]:
    problem, catalog, slower, enumerate_all = job
    before = perf_inference.KEPT.keys(), perf_training.KEPT.keys()
    enumerate_all(problem, catalog, slower)
    return perf_inference.KEPT.since(before[0]), perf_training.KEPT.since(before[1])


def _with_gpus(catalog: Catalog, share: set[str]) -> Catalog:
    servers = {
        k: c.model_copy(update={"gpus": [g for g in c.gpus if g in share]})
        for k, c in catalog.servers.items()
        if any(g in share for g in c.gpus)
    }
    return replace(
        catalog,
        gpus={k: g for k, g in catalog.gpus.items() if k in share},
        servers=servers,
        rentals={k: r for k, r in catalog.rentals.items() if k in share},
    )
