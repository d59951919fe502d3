"""A first plan for models of few services: the whole model with its pools restricted to a few
GPU types, solved first; its plan is a complete hint for the search.

Fleets get theirs from ``optimize.consolidate``. A small model needs no gathering: its services'
floors (``optimize.floors``) already name the types a cheap plan uses, and each training job's
cheapest GPU-days the type it would run on alone. Only those types' pools may have servers (those
already owned stay open); the rest of the model is as built, so the plan found is a plan of the
whole model. Measured on the examples (1 worker, benchmarks/README.md): startup's solve 0.211 ->
0.111 det. s (the restricted model proves the optimum in 0.03 s), lab-train-and-serve 0.103 ->
0.074, train-then-serve 0.015 -> 0.004, pretrain-cluster 0.044 -> 0.014; where the types cannot
hold the plan (inference-tight-power's site power) the restricted model is infeasible within
0.01 s and the search starts as before.

The start changes no bound and no optimum: a hint only orders the search.
"""

from __future__ import annotations

from ortools.sat.python import cp_model

from planner.optimize.built import Built

# its solve's deterministic limit: the restricted models of the examples prove theirs in 0.03 s
TYPE_START_DET_S = 1.0


def start_types(b: Built) -> list[str]:
    """The GPU types of every service's floor mix, of each job's cheapest owned option (GPU share
    x GPUs x days; ties by pool label) and of the pools already owned."""
    types = {key.gpu for key in b.kept}
    for floor in b.floors.values():
        if floor.found is not None:
            counts = zip(floor.reps, floor.found[1], strict=True)
            types |= {o.pool.gpu for (o, _), n in counts if n and o.rent_usd_per_gpu_hour is None}
    for options in b.train.values():
        owned = [o for o, _ in options if o.rent_usd_per_gpu_hour is None and o.pool in b.gpu_share_usd]
        if owned:
            cheapest = min(owned, key=lambda o: (b.gpu_share_usd[o.pool] * o.held_gpus * o.days, o.pool.label()))
            types.add(cheapest.pool.gpu)
    return sorted(types)


def type_start(b: Built) -> cp_model.CpModel | None:
    """The model with every pool of another type than ``start_types`` empty; None when the model
    is of several periods (no floors), has no types to keep or none to close."""
    if b.periods != 1 or not b.gpu_share_usd:
        return None
    keep = set(start_types(b))
    closed = [p.servers for key, p in sorted(b.pools.items()) if key.gpu not in keep]
    if not keep or not closed:
        return None
    start = b.model.clone()
    for servers in closed:
        start.add(start.get_int_var_from_proto_index(servers.index) == 0)
    return start
