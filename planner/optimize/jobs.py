"""Training jobs in the model: one option each, start days, ``after`` chains, and the GPUs each
job holds in each pool while it runs (the items ``optimize.time_sharing`` shares over time)."""

from __future__ import annotations

from ortools.sat.python import cp_model

from planner import units as u
from planner.bom import PoolKey
from planner.optimize.built import Built
from planner.optimize.time_sharing import Item, job_item, job_windows
from planner.options.types import TrainingOption, WorkloadOptions
from planner.schema.problem import Problem


def training(b: Built, problem: Problem, workloads: list[WorkloadOptions]) -> None:
    """Each job's option (exactly one), its duration, its start and the jobs it waits for."""
    m = b.model
    horizon = u.days_up(problem.horizon_years * 365)
    jobs = {j.name: j for j in problem.training}
    for w in (w for w in workloads if w.kind == "training"):
        xs = [(o, m.new_bool_var(f"train[{w.name}#{i}]")) for i, o in enumerate(w.training)]
        b.train[w.name] = xs
        m.add_exactly_one(x for _, x in xs).with_name(f"job:{w.name}:option")
        b.durations[w.name] = sum(u.days_up(o.days) * x for o, x in xs)
    for name, job in jobs.items():
        latest = u.days_down(job.deadline_days)
        b.starts[name] = m.new_int_var(u.days_up(job.release_day), max(horizon, latest), f"start[{name}]")
    by_lower = {n.lower(): n for n in jobs}
    for name, job in jobs.items():
        for dep in job.after:
            pred = by_lower[dep.lower()]
            m.add(b.starts[name] >= b.starts[pred] + b.durations[pred]).with_name(f"job:{name}:after:{pred}")


def job_items(b: Built, problem: Problem) -> dict[PoolKey, list[Item]]:
    """Per pool, the jobs that may run on it (rented GPUs are the cloud's, not a pool's)."""
    windows = job_windows(b, problem)
    items: dict[PoolKey, list[Item]] = {}
    for name, xs in b.train.items():
        by_pool: dict[PoolKey, list[tuple[TrainingOption, cp_model.IntVar]]] = {}
        for o, x in xs:
            if o.rent_usd_per_gpu_hour is None:
                by_pool.setdefault(o.pool, []).append((o, x))
        for key, options in by_pool.items():
            items.setdefault(key, []).append(job_item(name, options, b, windows[name]))
    return items
