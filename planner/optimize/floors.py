"""A service alone: its least GPU cost over its replica counts (its cost floor), the cut that
puts it in the model, and the small model the consolidated start and the closing cuts solve
(``optimize.consolidate``, ``optimize.type_floors``)."""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass

from ortools.sat.python import cp_model

from planner.bom import PoolKey
from planner.catalog import Catalog
from planner.finance import Rates
from planner.optimize.built import Built, Floor, upper
from planner.optimize.costs import rent_pv_usd
from planner.optimize.disagg import group_flows
from planner.optimize.serving import domain_spare
from planner.optimize.solve import CUT_LEVEL
from planner.optimize.stoppable import Helper
from planner.perf.memo import Memo
from planner.pricing import pool_pue, server_unit_tco_usd
from planner.schema.problem import Problem


@dataclass
class PendingFloors:
    """The services' floors being solved in a thread (``start_service_floors``): what each finds,
    by service, in their order."""

    floors: list[tuple[str, Floor]]
    found: Helper[list[tuple[int, tuple[int, ...]] | None]]


def start_service_floors(
    b: Built, problem: Problem, catalog: Catalog, rates: Rates, relax: Collection[str]
) -> PendingFloors:
    """A per-service lower bound on the cost of its GPUs, as a cut the LP can use.

    Whole replicas (and N+k spares) make a service's cost a step function of its
    demand; the LP relaxation sees only the slope. Each service is solved alone
    over its replica counts, pricing a GPU at its share of a server and a rack
    (servers and racks shared with other services cost no less than that share),
    and the proven bound becomes ``sum(gpu cost x replicas) >= bound``. The cut
    is implied by the model, so it changes no optimum; it only closes the gap
    sooner on problems with many services.

    In two halves: this one, once the services are built, prices each GPU's share and starts
    solving the floors in a thread; ``add_service_floors`` waits for them and adds the cuts at
    the end of the build. CP-SAT leaves the interpreter's lock while it searches, so the rest of
    the build goes on meanwhile (startup: the chat floor's 0.014 s solve of the 0.045 s build)."""
    site_per_gpu: dict[PoolKey, int] = {}
    for key, p in b.pools.items():
        server = server_unit_tco_usd(p.spec, catalog, problem, rates)
        pue = pool_pue(p.spec, catalog, problem)
        server -= p.spec.nics_per_server * rates.unit_tco_usd(
            p.spec.nic_price_usd, p.spec.nic_power_w, "network", pue=pue
        )
        rack = rates.unit_tco_usd(round(catalog.rack.price.usd), 0, "rack")
        # racks the site already has cost nothing: no share of one is certain
        rack_share = rack / p.fit_per_rack if p.fit_per_rack and not problem.site.existing_racks else 0.0
        site_per_gpu[key] = math.floor((server + rack_share) / p.spec.gpus_per_server)
    b.gpu_share_usd = site_per_gpu
    floored = [
        (name, per_year)
        for name, per_year in b.serve.items()
        if per_year and b.serve_rates[name][2] and f"service:{name}:rate" not in relax
    ]  # no floor for mixes: their capacity depends on the routing
    floors: list[tuple[str, Floor]] = []
    for name, per_year in floored:
        need, spare, pers, per_domain = b.serve_rates[name]
        reps = [(o, rs[0]) for o, rs in per_year]
        costs = [
            math.floor(rent_pv_usd(o, problem, rates))
            if o.rent_usd_per_gpu_hour is not None
            else site_per_gpu[o.pool] * o.gpus_per_replica
            for o, _ in reps
        ]
        floors.append((name, Floor(reps, costs, pers, per_domain, need, spare)))
    # a fleet's starts are built from its floors' mixes (``optimize.consolidate``): they keep the
    # settings they were measured with; a few services get the quick try first
    quick = len(floors) < FLEET_SERVICES
    found = Helper(lambda: [service_floor(floor, name, quick=quick) for name, floor in floors], "service floors")
    return PendingFloors(floors, found)


def add_service_floors(b: Built, pending: PendingFloors) -> None:
    """The floors found (``start_service_floors``), and each service's cut, in the services' order."""
    # each floor ends within its own limit: nothing to stop early, and at Ctrl-C or the run's
    # deadline they are waited for before it goes on (the build ends there, as in turn it would)
    found_all = pending.found.wait(stop=lambda: None, keep_at_deadline=False)
    for (name, floor), found in zip(pending.floors, found_all, strict=True):
        floor.found = found
        b.floors[name] = floor
        if found is not None:
            b.model.add(sum(c * r for c, (_, r) in zip(floor.costs, floor.reps, strict=True)) >= found[0]).with_name(
                f"service:{name}:floor"
            )


# services that make a fleet: its starts (``optimize.consolidate``) and cuts (``optimize.type_floors``)
FLEET_SERVICES = 8

_FLOORS: Memo[tuple[int, tuple[int, ...]] | None] = Memo(10_000)


def service_floor(
    f: Floor, name: str, uppers: list[int] | None = None, limit_s: float | None = None, quick: bool = False
) -> tuple[int, tuple[int, ...]] | None:
    """The least cost of a service's GPUs served alone (its proven bound) and the replicas per
    kind that reach it, kept for the process: what-if variants that change neither its demand
    nor its prices ask the same question. ``uppers``: at most so many replicas per kind (0
    leaves a kind out; default: the model's bounds). ``quick``: tried first with light settings
    (``_floor_alone``; the same bound, maybe another mix of the same cost)."""
    tops = [upper(r) for _, r in f.reps] if uppers is None else uppers
    limit = FLOOR_DET_S if limit_s is None else limit_s
    pools = tuple(o.pool for o, _ in f.reps)  # kinds sharing a pool are one kind at a time
    modes = tuple((o.mode, o.kv_group) for o, _ in f.reps)
    key = (pools, modes, tuple(f.costs), tuple(tops), tuple(f.pers), tuple(f.per_domain), f.need, f.spare, limit, quick)
    return _FLOORS.get(key, lambda: _floor_alone(f, name, limit, tops) if quick else solve_alone(f, name, limit, tops))


FLOOR_DET_S = 0.5
# A first try with light settings (no probing, one presolve pass, the LP without the
# disaggregated pairs' flows where there are none): it proves most floors in a few hundredths
# of a deterministic second (startup's chat 0.019 -> 0.003 det. s, 0.055 -> 0.013 s; bench_large
# seeds 7, 11, 13: every floor's bound as before, 2.9 -> 1.9 s in all, but other mixes of the same
# cost, which moved the fleets' starts: seed 13 1.46 -> 1.77%); the rest are solved as before.
QUICK_FLOOR_DET_S = 0.05


def _floor_alone(f: Floor, name: str, limit_s: float, uppers: list[int]) -> tuple[int, tuple[int, ...]] | None:
    alone, rs = alone_model(f, name, uppers)
    alone.minimize(sum(c * r for c, r in zip(f.costs, rs, strict=True)))
    flows = any(o.disaggregated for o, _ in f.reps)
    quick = solved_alone(alone, rs, min(limit_s, QUICK_FLOOR_DET_S), 2 if flows else 1, light=True, proven=True)
    return quick if quick is not None else solve_alone(f, name, limit_s, uppers)


def solve_alone(
    f: Floor, name: str, limit_s: float, uppers: list[int] | None = None
) -> tuple[int, tuple[int, ...]] | None:
    """A service alone over its replica counts (``uppers`` bound each kind, 0 leaves a kind out;
    default: the model's bounds): its proven least cost and the counts of the best mix found, or None."""
    alone, rs = alone_model(f, name, uppers)
    alone.minimize(sum(c * r for c, r in zip(f.costs, rs, strict=True)))
    return solved_alone(alone, rs, limit_s)


def alone_model(f: Floor, name: str, uppers: list[int] | None = None) -> tuple[cp_model.CpModel, list[cp_model.IntVar]]:
    """A service's demand and spares over its replica counts, as in the full model (no objective)."""
    alone = cp_model.CpModel()
    tops = [upper(r) for _, r in f.reps] if uppers is None else uppers
    rs = [alone.new_int_var(0, top, "r") for top in tops]
    kinds = [(o, r, per) for (o, _), r, per in zip(f.reps, rs, f.pers, strict=True)]
    # disaggregated phases serve in pairs: their KV groups' flows, as in the full model
    flows, _ = group_flows(alone, name, kinds, f.need, 0)
    capacity = sum(per * r for o, r, per in kinds if not o.disaggregated) + flows
    alone.add(capacity >= f.need)
    if f.spare:
        domain_spare(alone, kinds, f.per_domain, capacity, f.need, f.spare, name)
    return alone, rs


def solved_alone(
    alone: cp_model.CpModel,
    rs: list[cp_model.IntVar],
    limit_s: float,
    linearization_level: int = 2,
    light: bool = False,
    proven: bool = False,
) -> tuple[int, tuple[int, ...]] | None:
    """One worker, a deterministic limit: the proven bound and the counts found, or None (with
    ``proven``, None too when the optimum is not proven). ``light``: no probing, one presolve pass.

    ``linearization_level`` 2, as the whole model's: at level 1 the LP holds no disaggregated
    pair's flows, and a service with prefill/decode kinds kept a bound of 0 after its 0.5 s
    (bench_large seed 11: two services, $263k of floor; with level 2 both proven at once)."""
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_deterministic_time = limit_s
    solver.parameters.cut_level = CUT_LEVEL  # as the whole model's: more services proven in the limit
    solver.parameters.linearization_level = linearization_level
    if light:
        solver.parameters.cp_model_probing_level = 0
        solver.parameters.max_presolve_iterations = 1
    status = solver.solve(alone)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE) or (proven and status != cp_model.OPTIMAL):
        return None
    return math.floor(solver.best_objective_bound), tuple(int(solver.value(r)) for r in rs)
