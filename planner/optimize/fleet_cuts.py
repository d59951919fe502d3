"""Cuts made for fleets: each is implied by the model (no optimum changes), and each tightens
the bound of a many-service model more than it slows its search. A model of fewer services gets
them only when its first solve phase ends unproven (``forced_fleet_cuts``, ``Built.later_cuts``)."""

from __future__ import annotations

from ortools.sat.python import cp_model

from planner.catalog import Catalog
from planner.finance import Rates
from planner.optimize.built import Built
from planner.optimize.job_floor import add_job_floor, cabled
from planner.optimize.type_floors import add_closing_cuts
from planner.optimize.type_set_floor import add_type_set_floor
from planner.options.types import WorkloadOptions
from planner.schema.problem import Problem


def add_fleet_cuts(
    b: Built, problem: Problem, catalog: Catalog, workloads: list[WorkloadOptions], rates: Rates
) -> None:
    """Cuts that tighten the bound of a fleet (each implied by the model: no optimum changes)."""
    add_closing_cuts(b)
    add_type_set_floor(b)
    add_job_floor(b, problem, catalog, workloads, rates)
    add_job_fabric_cuts(b)


def forced_fleet_cuts(
    b: Built, problem: Problem, catalog: Catalog, workloads: list[WorkloadOptions], rates: Rates
) -> None:
    """The fleet cuts on a model of fewer services, once (``Built.later_cuts``).

    Measured (benchmarks/README.md, stop 38): three of six generated problems of 2-4 services and
    1-2 jobs are not proven at 20 det. s; their gaps went 18.3 / 30.4 / 10.6% -> 8.6 / 12.2 / 4.4%
    on the same plans (most of it the type-set floor's). Startup, proven in 0.21 det. s, would take
    twice as long with them."""
    b.later_cuts = None
    b.fleet_forced = True
    add_fleet_cuts(b, problem, catalog, workloads, rates)


def add_job_fabric_cuts(b: Built) -> None:
    """A job on a pool of a fabric cables at least one of its servers to a leaf of it: for each
    job and fabric, its options there sum to at most the fabric's leaves. The LP relaxation
    otherwise pays a sliver of a switch (16 NIC ports of a 64-port leaf: a quarter); the cut is
    implied by the model (one option per job, whose GPUs are that pool's servers). Measured on
    bench_large seed 11: bound +$33k at 60 det. s. Made with the other fleet cuts: on startup
    the search took twice as long with it (0.211 -> 0.419 det. s)."""
    for name, xs in sorted(b.train.items()):
        on: dict[str, list[cp_model.IntVar]] = {}
        for o, x in xs:
            if (fid := cabled(b, o)) is not None:
                on.setdefault(fid, []).append(x)
        for fid, chosen in sorted(on.items()):
            b.model.add(sum(chosen) <= b.fabrics[fid].leaves).with_name(f"job:{name}:leaf:{fid}")
