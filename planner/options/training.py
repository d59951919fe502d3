"""Training options: every deployment (GPU, chassis, fabric, size) that finishes a job in time."""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence
from typing import TypeAlias

from planner.bom import PoolKey
from planner.catalog import Catalog
from planner.fabric import fits, offered
from planner.options.types import PoolLimit, Rejection, TrainingOption, WorkloadOptions
from planner.perf.links import link_for, packing_sizes
from planner.perf.shapes import ModelShape, shape_of
from planner.perf.training import TrainingEstimate, TrainingQuery, estimate_training
from planner.schema.catalog import Gpu, ServerChassis
from planner.schema.fabric import DEFAULT_TOPOLOGY, Fabric
from planner.schema.problem import Problem, TrainingJob

Estimator: TypeAlias = Callable[[int], TrainingEstimate]  # a job's figures on n GPUs


def topological(jobs: list[TrainingJob]) -> list[TrainingJob]:
    """Jobs after the jobs they wait on (the schema has already refused cycles)."""
    done: dict[str, TrainingJob] = {}
    pending = list(jobs)
    while pending:
        ready = [j for j in pending if all(d.lower() in done for d in j.after)]
        for j in ready:
            done[j.name.lower()] = j
        pending = [j for j in pending if j.name.lower() not in done]
    return list(done.values())


def training_options(
    job: TrainingJob,
    problem: Problem,
    catalog: Catalog,
    limit: PoolLimit,
    has_dependents: bool,
    slower: bool = False,
    earliest_start: float | None = None,
) -> WorkloadOptions:
    shape = shape_of(job.model, catalog)
    wo = WorkloadOptions(job.name, "training", shape)
    start = job.release_day if earliest_start is None else earliest_start
    window = job.deadline_days - start
    fat_tree: dict[tuple[str, str, str], int] = {}  # the fat tree's deadline size (GPUs), per pool
    for chassis in catalog.servers.values():
        for gpu_id in chassis.gpus:
            gpu = catalog.gpus[gpu_id]
            for fabric in catalog.fabrics.values():  # a fat tree before its other wirings
                if not fits(fabric, chassis):  # no scale-out NICs; one rail is no rail-optimised fabric
                    continue
                if _fat_tree_suffices(fabric, chassis, fat_tree.get((chassis.id, gpu_id, fabric.base_id))):
                    continue
                key = PoolKey(chassis.id, gpu_id, fabric.id)
                cap, why = limit(key)
                if cap == 0:
                    wo.rejected.append(Rejection(gpu_id, chassis.id, why))
                    continue
                sizes = job_sizes(chassis, fabric, cap)

                def estimate(
                    n: int, chassis: ServerChassis = chassis, gpu: Gpu = gpu, fabric: Fabric = fabric
                ) -> TrainingEstimate:
                    return estimate_job(job, shape, catalog, chassis, gpu, fabric, n)

                chosen, reason = _smallest_in_time(sizes, estimate, window)
                if chosen is not None and fabric.topology == DEFAULT_TOPOLOGY:
                    fat_tree[(chassis.id, gpu_id, fabric.id)] = chosen
                picks = [] if chosen is None else [chosen] + (_faster_sizes(chosen, sizes) if has_dependents else [])
                limit_days = window
                # a diagnosis sizes slower jobs on the fat tree; the other wirings keep their
                # deadline sizes (measured: the full range on them made infeasible-budget 10x slower)
                if slower and fabric.topology == DEFAULT_TOPOLOGY:
                    limit_days = problem.horizon_years * 365.0 - start
                    picks = sorted(set(picks) | set(_slower_sizes(sizes, estimate, limit_days, chosen)))
                if not picks:
                    if sizes:
                        wo.rejected.append(Rejection(gpu_id, chassis.id, f"{fabric.id}: {reason}"))
                    continue
                added = len(wo.training)
                for n in picks:
                    est = estimate(n)
                    servers = math.ceil((n + est.hot_spare_gpus) / chassis.gpus_per_server)
                    if est.fits and est.days <= limit_days and servers <= cap:
                        wo.training.append(TrainingOption(job.name, key, n, est))
                est = estimate(picks[0])
                if len(wo.training) == added and est.fits and est.days <= limit_days:
                    # every size in time needs, with its hot spares, more servers than the pool may have
                    wo.rejected.append(
                        Rejection(
                            gpu_id,
                            chassis.id,
                            f"{fabric.id}: {picks[0]} GPUs and {est.hot_spare_gpus} hot-spare GPUs need more "
                            f"than the {cap} servers this pool may have",
                        )
                    )
    return wo


def _fat_tree_suffices(fabric: Fabric, chassis: ServerChassis, fat_tree_gpus: int | None) -> bool:
    """A 2:1 or rail-optimised wiring is not offered to a job the fat tree of the same fabric
    trains in time within one switch's ports: the others only hold it beyond one switch
    (``job_sizes``), where it needs more servers and more network."""
    if fabric.topology == DEFAULT_TOPOLOGY or fat_tree_gpus is None:
        return False
    return not offered(fabric, math.ceil(fat_tree_gpus * chassis.scaleout_nics / chassis.gpus_per_server))


def job_sizes(chassis: ServerChassis, fabric: Fabric, cap: int) -> Sequence[int]:
    """The sizes a job may take in a pool of at most ``cap`` servers.

    Without a scale-out fabric: inside one server, sizes that each divide the next
    (``packing_sizes``: 1, 2, 4, 8 on an 8-GPU HGX; 1, 2, 4, 8, 24, 72 on an NVL72 rack, whole
    4-GPU trays from 4 up), so the jobs and replicas sharing the pool pack into whole servers
    and none leaves its NVLink domain.

    With a fabric: beyond one server, in whole servers (2..cap), or on rack-scale systems in
    whole compute trays (76, 80, ... GPUs on NVL72). Such a pool holds only these jobs, and the
    optimiser counts GPUs, not racks, per pool (``optimize.model._gpu_use``): that packs, since
    every size is whole trays and a rack is 18 of them (72 is a multiple of 4), so jobs whose
    GPUs add up to at most 72 x racks need at most 18 x racks trays, spanning racks over the
    fabric. A 256-GPU job on GB200 NVL72 holds 64 trays: three racks and 10 of the 18 trays of
    a fourth; the fourth rack's other 8 trays (32 GPUs) stay free for the pool's other jobs
    (at the same time), and on its own the job still buys four whole racks.

    A 2:1 or rail-optimised wiring is offered only to sizes whose NIC ports one switch cannot
    hold (``planner.fabric.offered``): 9 servers and up for 8-NIC servers on 64-port switches.
    """
    per = chassis.gpus_per_server
    if fabric.kind == "none":
        return packing_sizes(per, chassis.gpus_per_tray)
    step = chassis.gpus_per_tray or per
    first = per + step
    while first <= cap * per and not offered(fabric, math.ceil(first * chassis.scaleout_nics / per)):
        first += step  # 2:1 and rail-optimised wirings: only jobs beyond one switch's ports
    return range(first, cap * per + 1, step)  # lazy: caps can be large


def estimate_job(
    job: TrainingJob,
    shape: ModelShape,
    catalog: Catalog,
    chassis: ServerChassis,
    gpu: Gpu,
    fabric: Fabric,
    n: int,
    rented: bool = False,
) -> TrainingEstimate:
    """One job on ``n`` GPUs of one kind in one chassis and fabric (the verifier asks the same);
    ``rented``: on a cloud's GPUs (``perf.training.rented_estimate``)."""
    q = TrainingQuery(
        model=shape,
        gpu=gpu,
        gpus=n,
        tokens=job.tokens,
        precision=job.precision,
        method=job.method,
        fabric=fabric,
        gpus_per_server=chassis.gpus_per_server,
        gpus_per_tray=chassis.gpus_per_tray,
        nics_per_server=chassis.scaleout_nics,
        gpu_link=link_for(chassis, gpu, min(n, chassis.gpus_per_server)).kind,
        seq_len=job.seq_len,
        mfu=job.mfu,
        rented=rented,
    )
    eff = catalog.efficiency
    return estimate_training(q, eff.generations[gpu.generation], eff.training, eff.serving.memory_reserve_fraction)


def _smallest_in_time(sizes: Sequence[int], estimate: Estimator, window: float) -> tuple[int | None, str]:
    """The smallest size that fits in memory and finishes within the window.

    Larger jobs finish sooner (scaling losses are small per doubling), so the sizes in time are
    the largest ones, and the search brackets the first of them from a guess, then bisects.
    """
    if not sizes:
        return None, "no job size available"
    largest = estimate(sizes[-1])
    if not largest.fits:
        return None, largest.reason
    if largest.days > window:
        return None, f"{largest.days:.1f} days even on {sizes[-1]} GPUs > {window:g}-day window"

    def in_time(i: int) -> bool:
        e = estimate(sizes[i])
        return e.fits and e.days <= window

    # Days fall about as 1 / GPUs, a little slower (scaling losses): the size that would just make
    # it at the largest size's rate is at the boundary or a few sizes from it. Searched from there
    # in growing steps, then halved: the same smallest size as a bisection of the whole range, in
    # 2-5 estimates instead of 9-12 on a fabric's hundreds of sizes (startup's jobs: 2,544 -> 829
    # estimates in these searches, 0.11 -> 0.05 s to size both).
    share = largest.days / window if window > 0 else 0.0  # at most 1: the largest size is in time
    guess = bisect.bisect_left(sizes, math.ceil(sizes[-1] * share))
    lo, hi = _bracket(in_time, min(guess, len(sizes) - 1), len(sizes) - 1)
    while lo < hi:
        mid = (lo + hi) // 2
        if in_time(mid):
            hi = mid
        else:
            lo = mid + 1
    return sizes[lo], ""


def _bracket(in_time: Callable[[int], bool], guess: int, last: int) -> tuple[int, int]:
    """Indices ``lo <= hi`` with the smallest index in time between them (``last`` is in time),
    found from ``guess`` in steps of 1, 2, 4, ... towards it."""
    step = 1
    if in_time(guess):  # the boundary is at or below the guess
        hi = guess
        while hi > 0:
            lo = max(0, hi - step)
            if not in_time(lo):
                return lo + 1, hi
            hi, step = lo, step * 2
        return 0, 0
    lo = guess + 1  # above it
    while True:
        hi = min(last, lo + step - 1)
        if hi == last or in_time(hi):
            return lo, hi
        lo, step = hi + 1, step * 2


def _slower_sizes(sizes: Sequence[int], estimate: Estimator, longest_days: float, chosen: int | None) -> list[int]:
    """Sizes from the smallest that finishes within the horizon up to the deadline's size.

    Every size up to 16 servers' worth, then steps of about 10%: a deadline fix found
    with them is exact to within one step of job size.
    """
    smallest, _ = _smallest_in_time(sizes, estimate, longest_days)
    if smallest is None:
        return []
    top = chosen if chosen is not None else sizes[-1]
    lo = bisect.bisect_left(sizes, smallest)
    hi = bisect.bisect_right(sizes, top)
    out: list[int] = []
    i = lo
    while i < hi:
        out.append(sizes[i])
        step = 1 if i - lo < 16 else max(1, (i - lo) // 10)
        i += step
    return out


def _faster_sizes(chosen: int, sizes: Sequence[int]) -> list[int]:
    """Larger sizes for jobs others wait on: finishing sooner gives successors time."""
    out: list[int] = []
    for factor in (1.5, 2.0, 4.0):
        i = bisect.bisect_left(sizes, math.ceil(chosen * factor))
        if i < len(sizes) and sizes[i] != chosen and sizes[i] not in out:
            out.append(sizes[i])
    return out
