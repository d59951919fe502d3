"""What closing a GPU type costs each service: cuts that let the LP see the per-type charge.

Each owned GPU type costs ``finance.ops_usd_per_gpu_type_year`` whatever its size, through a
0/1 flag (``model.gpu_type_used``) that the LP relaxation sets to a sliver, and a service's
floor (``floors.start_service_floors``) is its cost with every type open. On the benchmark fleet
without jobs (``benchmarks/generate.py --seed 7 --jobs 0``) the plan paid $580k of type charges
(7 types) and the search's bound stalled $720k below it: the gap was mostly those charges.

For each owned type ``t`` a service's floor mix uses, the service is solved again without
``t``; if that costs ``F_t`` > its floor ``F``, then

    (the service's GPUs at share prices) >= F_t - (F_t - F) x flag_t

holds in every plan: with ``t`` bought it says no more than the floor; without, the service
runs on the other types, where it costs at least ``F_t``. The LP must now pay for a service's
favourite type either in its flag or in the service's cost. Measured on that fleet at 20
deterministic seconds: bound $9.64M -> $9.91M, gap 7.3% -> 4.6%; with its jobs (bench_large
seeds 7, 11, 13) the bounds rose $0.25-0.31M, and the 2x fleet went from 6.3% to 2.8%. Each training
job's options on a type are bounded by its flag too (the job runs on exactly one option).
The cuts are implied by the model (no optimum or tie-break changes); each solve is memoised
with the floors (``floors.service_floor``), so what-if variants reuse them.
"""

from __future__ import annotations

from ortools.sat.python import cp_model

from planner.optimize.built import Built, Floor, upper
from planner.optimize.floors import FLEET_SERVICES, service_floor
from planner.options.types import InferenceOption, TrainingOption

MIN_SERVICES = FLEET_SERVICES  # a fleet: on startup (one service) the cuts slowed the solve (1.7 -> 2.4 s)
CLOSED_DET_S = 0.2  # each service's solve without one type: its proven bound is what counts
MAX_CLOSINGS = 400  # solves per build: bounds the work on a fleet of hundreds of services


def a_fleet(b: Built) -> bool:
    """Enough services with a floor for the cuts made for fleets (``optimize.fleet_cuts``) at build
    time: on a few services they slow a search that proves its plan anyway (startup), so a small
    model gets them only when its first phase did not prove (``Built.later_cuts``)."""
    return sum(f.found is not None for f in b.floors.values()) >= MIN_SERVICES


def add_closing_cuts(b: Built) -> None:
    """A fleet cut (``optimize.fleet_cuts``: its caller decides when)."""
    _job_type_cuts(b)
    solves = 0
    for name, f in sorted(b.floors.items()):
        if f.found is None:
            continue
        for gpu in _types_used(b, f):
            if solves >= MAX_CLOSINGS:
                return
            solves += 1
            uppers = [0 if _on(o, gpu) else upper(r) for o, r in f.reps]
            found = service_floor(f, name, uppers, CLOSED_DET_S)
            if found is None:  # not proven either way within the limit: no cut
                continue
            without = max(found[0], f.found[0])
            if without <= f.found[0]:
                continue
            cost = sum(c * r for c, (_, r) in zip(f.costs, f.reps, strict=True))
            step = without - f.found[0]
            b.model.add(cost >= without - step * b.gpu_type_used[gpu]).with_name(f"service:{name}:without:{gpu}")


def _job_type_cuts(b: Built) -> None:
    """A job runs on exactly one option: the flag of its GPU type is at least the job's options on it."""
    for name, xs in sorted(b.train.items()):
        on: dict[str, list[cp_model.IntVar]] = {}
        for o, x in xs:
            if owned_type(b, o):
                on.setdefault(o.pool.gpu, []).append(x)
        for gpu, chosen in sorted(on.items()):
            b.model.add(sum(chosen) <= b.gpu_type_used[gpu]).with_name(f"job:{name}:type:{gpu}")


def _types_used(b: Built, f: Floor) -> list[str]:
    """The owned GPU types of the service's floor mix (closing another one leaves the floor)."""
    assert f.found is not None
    return sorted(mix_types(b, f, f.found[1]))


def mix_types(b: Built, f: Floor, counts: tuple[int, ...]) -> set[str]:
    """The owned GPU types a mix of the service's replica kinds uses."""
    return {o.pool.gpu for (o, _), n in zip(f.reps, counts, strict=True) if n and owned_type(b, o)}


def owned_type(b: Built, o: InferenceOption | TrainingOption) -> bool:
    return o.rent_usd_per_gpu_hour is None and o.pool.gpu in b.gpu_type_used


def _on(o: InferenceOption, gpu: str) -> bool:
    return o.rent_usd_per_gpu_hour is None and o.pool.gpu == gpu
