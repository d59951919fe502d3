"""Rented twins of owned options: the same hardware and figures, paid by the hour."""

from __future__ import annotations

from dataclasses import replace

from planner.catalog import Catalog
from planner.options.types import InferenceOption, TrainingOption, WorkloadOptions
from planner.perf.training import rented_estimate


def add_rentals(wo: WorkloadOptions, catalog: Catalog, pricing: str) -> None:
    """Rented twins of the options whose GPU a cloud offers.

    A rented option is the same hardware and the same figures, paid by the hour:
    services for the whole horizon (at the reserved price when asked), training
    jobs for their duration (on demand: nobody commits for years to a burst). A rented
    job holds no hot spares and waits for no repair: the cloud swaps a failed server in
    from its own fleet (``perf.training.rented_estimate``), so its goodput and days differ.
    """
    served: dict[tuple[str, str, int], InferenceOption] = {}
    for o in wo.inference:
        price = catalog.rent_usd_per_gpu_hour(o.gpu, pricing)
        # a cloud GPU is the same in any chassis: one rented twin per (GPU, precision, size)
        twin = (o.gpu, o.precision, o.gpus_per_replica)
        # disaggregated phases are bought: a cloud's network between rented replicas is not modelled
        if price is not None and o.rent_usd_per_gpu_hour is None and twin not in served and not o.disaggregated:
            served[twin] = replace(o, rent_usd_per_gpu_hour=price)
    wo.inference.extend(served.values())
    best: dict[tuple[str, int], TrainingOption] = {}
    for t in wo.training:
        price = catalog.rent_usd_per_gpu_hour(t.gpu, "on_demand")
        if price is None:
            continue
        key = (t.gpu, t.gpus)  # a cloud job costs GPU-hours: keep the fastest of each size
        cloud = replace(t, rent_usd_per_gpu_hour=price, estimate=rented_estimate(t.estimate))
        if key not in best or cloud.days < best[key].days:
            best[key] = cloud
    wo.training.extend(best[k] for k in sorted(best))
