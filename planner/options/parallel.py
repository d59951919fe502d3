"""Every service's replica kinds, in worker processes when there are many services.

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
from typing import Any

from planner.bom import PoolKey
from planner.catalog import Catalog
from planner.options.disagg import kv_routes
from planner.options.inference import inference_options
from planner.options.types import PoolLimit, WorkloadOptions
from planner.perf import inference as perf_inference
from planner.schema.problem import InferenceService

PARALLEL_FROM_SERVICES = 8  # fewer: starting workers costs more than it saves


def service_options(services: list[InferenceService], catalog: Catalog, limit: PoolLimit) -> list[WorkloadOptions]:
    workers = min(os.cpu_count() or 1, len(services))
    if len(services) < PARALLEL_FROM_SERVICES or workers < 2 or multiprocessing.parent_process() is not None:
        return [inference_options(svc, catalog, limit) for svc in services]
    from planner.executors import map_ordered

    keys = {PoolKey(chassis.id, gpu, "none") for chassis in catalog.servers.values() for gpu in chassis.gpus}
    keys |= {  # the pools disaggregated phases may live on
        key
        for chassis in catalog.servers.values()
        for gpu in chassis.gpus
        for key, _, _ in kv_routes(catalog, chassis, catalog.gpus[gpu])
    }
    limits = {key: limit(key) for key in keys}
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
