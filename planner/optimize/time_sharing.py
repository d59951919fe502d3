"""GPUs a pool's workloads share over time: jobs hold theirs while they run, services with a
window while it lasts, and the rest of a pool's GPUs serve all year.

A cumulative over every job that could use a pool is exact but weak: its linear relaxation
lets a chosen job run on no servers at all. Two facts make it smaller and the bound tighter.
Workloads that can never overlap in time (one waits for the other, or their windows are
disjoint) never compete, so a pool's workloads split into groups that may overlap, and a
group of one is a linear constraint (its demand <= the free GPUs). Every workload in a group
still needs its own GPUs free (a cut), and a group whose jobs all fit in a window needs
their GPU-days within the free GPUs times that window (an energy cut).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from planner import units as u
from planner.optimize.built import Built, Expr, upper
from planner.options.types import TrainingOption
from planner.schema.problem import Problem

INF = 10**12  # no latest end: a relaxed deadline, or a service to the horizon's end


@dataclass
class Item:
    """One workload's use of one pool: an interval (per option, for a job) and its GPUs."""

    name: str
    held: Expr  # GPUs it holds while it runs (the chosen option's, for a job)
    earliest: int  # in hundredths of a day
    latest: int  # INF: unbounded
    window: cp_model.IntervalVar | None = None  # a service's
    options: list[tuple[TrainingOption, cp_model.IntVar]] = field(default_factory=list)  # a job's, in this pool
    start: cp_model.IntVar | None = None  # a job's
    energy: Expr | None = None  # GPU x time units, for a job; None for a service

    def intervals(self, m: cp_model.CpModel, label: str) -> list[tuple[cp_model.IntervalVar, Expr]]:
        """(interval, GPUs while it runs): the service's window, or one per option of the job
        (made only for a cumulative: a job that overlaps nothing needs none)."""
        if self.window is not None:
            return [(self.window, self.held)]
        assert self.start is not None
        return [
            (
                m.new_optional_fixed_size_interval_var(self.start, u.days_up(o.days), x, f"run[{self.name}@{label}]"),
                o.held_gpus,
            )
            for o, x in self.options
        ]


def job_windows(b: Built, problem: Problem) -> dict[str, tuple[int, int]]:
    """Per job: (earliest start, latest end) in model time units, from release days, the
    fastest option of each predecessor, and deadlines that are not relaxed."""
    jobs = {j.name: j for j in problem.training}
    fastest = {n: min((u.days_up(o.days) for o, _ in xs), default=0) for n, xs in b.train.items()}
    by_lower = {n.lower(): n for n in jobs}
    out: dict[str, tuple[int, int]] = {}

    def earliest(name: str) -> int:
        if name not in out:
            job = jobs[name]
            preds = [by_lower[d.lower()] for d in job.after]
            first = max([u.days_up(job.release_day), *(earliest(p) + fastest[p] for p in preds)])
            relaxed = f"job:{name}:deadline" in b.slacks
            out[name] = (first, INF if relaxed else u.days_down(job.deadline_days))
        return out[name][0]

    for name in jobs:
        earliest(name)
    return out


def ancestors(problem: Problem) -> dict[str, set[str]]:
    """Per job (lower-case name): every job it waits for, directly or not."""
    preds = {j.name.lower(): {d.lower() for d in j.after} for j in problem.training}
    out: dict[str, set[str]] = {}

    def walk(name: str) -> set[str]:
        if name not in out:
            out[name] = set()
            for p in preds.get(name, ()):
                out[name] |= {p} | walk(p)
        return out[name]

    for name in preds:
        walk(name)
    return out


def job_item(
    name: str, options: list[tuple[TrainingOption, cp_model.IntVar]], b: Built, window: tuple[int, int]
) -> Item:
    held: Expr = sum(o.held_gpus * x for o, x in options)  # hot spares too
    energy: Expr = sum(o.held_gpus * u.days_up(o.days) * x for o, x in options)
    return Item(name, held, window[0], window[1], options=options, start=b.starts[name], energy=energy)


def groups(items: list[Item], waits: dict[str, set[str]]) -> list[list[Item]]:
    """Items linked when they may overlap in time (connected components, in input order)."""
    parent = list(range(len(items)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, a in enumerate(items):
        for j in range(i):
            c = items[j]
            chained = c.name.lower() in waits.get(a.name.lower(), ()) or a.name.lower() in waits.get(c.name.lower(), ())
            if not chained and a.earliest < c.latest and c.earliest < a.latest:
                parent[find(i)] = find(j)
    out: dict[int, list[Item]] = {}
    for i, item in enumerate(items):
        out.setdefault(find(i), []).append(item)
    return list(out.values())


def _affine(m: cp_model.CpModel, demand: Expr, free: cp_model.IntVar, label: str) -> cp_model.LinearExprT:
    """A cumulative's demand must be affine (one variable): a service holding replicas of
    several kinds in one pool (disaggregated phases, two sizes) holds their sum."""
    if isinstance(demand, (int, cp_model.IntVar)):
        return demand
    held = m.new_int_var(0, upper(free), f"held[{label}]")
    m.add(held == demand)
    return held


def share(
    m: cp_model.CpModel, free: cp_model.IntVar, items: list[Item], waits: dict[str, set[str]], label: str
) -> None:
    """The free GPUs hold every group of items that may overlap (single-period pools)."""
    for group in groups(items, waits):
        for item in group:
            m.add(item.held <= free)
        if len(group) == 1:
            continue
        runs = [run for item in group for run in item.intervals(m, label)]
        m.add_cumulative([r for r, _ in runs], [_affine(m, d, free, label) for _, d in runs], free)
        span = max(i.latest for i in group) - min(i.earliest for i in group)
        if all(i.energy is not None for i in group) and span < INF // 2:
            m.add(sum(i.energy for i in group if i.energy is not None) <= span * free)


def share_by_year(m: cp_model.CpModel, free: cp_model.IntVar, items: list[Item], spare: list[Expr], label: str) -> None:
    """Multi-year pools: the GPUs services leave free change by year (``spare``), so one
    cumulative holds every item, and a fixed block per year takes away what that year lacks
    against ``free``, the best year's."""
    most = upper(free)
    pairs = [run for item in items for run in item.intervals(m, label)]
    runs = [r for r, _ in pairs]
    demands: list[cp_model.LinearExprT] = [_affine(m, d, free, label) for _, d in pairs]
    year = u.days_up(365)
    for y, free_in_year in enumerate(spare):
        m.add(free >= free_in_year)
        block = m.new_int_var(0, most, f"unavailable[{label}@{y}]")
        m.add(block == free - free_in_year)
        runs.append(m.new_fixed_size_interval_var(y * year, year, f"year[{label}@{y}]"))
        demands.append(block)
    for item in items:
        m.add(item.held <= free)
    m.add_cumulative(runs, demands, free)
