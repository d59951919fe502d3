"""Every way each workload could be deployed: feasible options with their figures,
and for every GPU that cannot serve a workload, the reason.

An option fixes the GPU, the server chassis, the fabric, the precision and the
parallelism; the optimiser only chooses how many of each to use.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial

from planner.bom import PoolKey
from planner.catalog import Catalog
from planner.options.dominance import prune_training
from planner.options.parallel import workload_options
from planner.options.pools import OptionLimits
from planner.options.rentals import add_rentals
from planner.options.training import topological, training_options
from planner.options.types import InferenceOption, PoolLimit, Rejection, TrainingOption, WorkloadOptions
from planner.schema.problem import Problem


def build_options(
    problem: Problem, catalog: Catalog, slower: bool = False, meanwhile: Callable[[], object] | None = None
) -> list[WorkloadOptions]:
    """Every workload's options. ``slower`` adds, for a diagnosis, training sizes that
    miss the deadline, so that "extend the deadline to D" can be measured. ``meanwhile`` runs
    while the options are estimated (in worker processes, when there are enough)."""
    limit = OptionLimits(problem, catalog)
    training = partial(_training, problem, catalog, slower=slower)
    with workload_options(list(problem.inference), catalog, limit, training) as collect:  # workers start now
        if meanwhile is not None:
            meanwhile()
        trained, served = collect()
    out = trained + served
    _on_training_pools(problem, out)
    if problem.finance.rent != "none":
        for wo in out:
            add_rentals(wo, catalog, problem.finance.rent)
    if not problem.finance.buy:  # rent only
        for wo in out:
            options: list[InferenceOption | TrainingOption] = [*wo.inference, *wo.training]
            owned = [o for o in options if o.rent_usd_per_gpu_hour is None]
            wo.rejected += [
                Rejection(o.gpu, o.pool.server, "rent only (finance.buy: false), no cloud price") for o in owned
            ]
            wo.inference = [o for o in wo.inference if o.rent_usd_per_gpu_hour is not None]
            wo.training = [o for o in wo.training if o.rent_usd_per_gpu_hour is not None]
    return out


def _training(problem: Problem, catalog: Catalog, limit: PoolLimit, slower: bool) -> list[WorkloadOptions]:
    """Every training job's options, in the problem's order (sized in the order of their chains)."""
    dependents = {d.lower() for j in problem.training for d in j.after}
    by_name: dict[str, WorkloadOptions] = {}
    earliest_end: dict[str, float] = {}
    for job in topological(problem.training):
        # A job cannot start before its predecessors can possibly end: size it for that window.
        start = max([job.release_day, *(earliest_end[d.lower()] for d in job.after)])
        in_chain = job.name.lower() in dependents or bool(job.after)
        wo = training_options(job, problem, catalog, limit, in_chain, slower, start)
        fastest = min((o.days for o in wo.training), default=float("inf"))
        earliest_end[job.name.lower()] = start + fastest
        by_name[job.name] = wo
    out = [by_name[job.name] for job in problem.training]
    if not slower:  # pruning weighs days only for jobs in a chain: not for a relaxed deadline
        # Servers of a pool two jobs could use may be shared over time: no pruning there.
        users: dict[PoolKey, set[str]] = {}
        for wo in out:
            for o in wo.training:
                users.setdefault(o.pool, set()).add(wo.name)
        shared = {k for k, names in users.items() if len(names) > 1}
        for job, wo in zip(problem.training, out, strict=True):
            in_chain = job.name.lower() in dependents or bool(job.after)
            wo.training = prune_training(wo.training, problem, catalog, in_chain, shared)
    return out


def _on_training_pools(problem: Problem, out: list[WorkloadOptions]) -> None:
    """A service that holds its GPUs for part of the horizon may run on a training job's pool
    (its servers have a scale-out fabric, which serving does not need but does not mind): the
    GPUs that train a model can serve it once the job is done."""
    windowed = {s.name for s in problem.inference if s.windowed}
    pools = {o.pool for wo in out for o in wo.training if o.pool.fabric != "none" and o.rent_usd_per_gpu_hour is None}
    for wo in out:
        if wo.name not in windowed:
            continue
        extra = [
            replace(o, pool=key)
            for o in wo.inference
            if o.rent_usd_per_gpu_hour is None and o.pool.fabric == "none" and not o.disaggregated
            for key in sorted(pools)
            if (key.server, key.gpu) == (o.pool.server, o.pool.gpu)
        ]
        wo.inference += extra
