"""Exact pruning of training options that can never be in an optimal plan.

Option ``b`` (a job spread over whole servers on a scale-out fabric, in a pool no
other job can use) is dropped when a single-server option ``a`` of the same job is
no worse on everything the solver weighs: ``a`` bought on its own (its server and a
rack, and on another GPU type than ``b``'s that type's operations charge) costs no
more than the least ``b`` can add (its servers, NICs and cables; switches and racks
may be shared), in TCO and, where the problem limits them, in capex, power and
racks; it is at least as fast when other jobs wait on this one; and it breaks no
per-GPU rule (stock, a cap on GPU types). Swapping ``b`` for ``a`` in any plan
then keeps the plan feasible and costs no more, so dropping ``b`` loses nothing.

Without this, every slow GPU that could train a job on enough servers adds
options the solver must rule out one by one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner.bom import PoolKey, pool_spec, servers_per_rack
from planner.catalog import Catalog
from planner.finance import Rates
from planner.options.types import TrainingOption
from planner.pricing import server_unit_tco_usd
from planner.schema.problem import Problem


@dataclass(frozen=True)
class Footprint:
    tco_usd: float
    capex_usd: float
    power_w: float
    racks: int


def standalone(o: TrainingOption, problem: Problem, catalog: Catalog, rates: Rates) -> Footprint:
    """Everything a single-server option needs when bought on its own: an upper bound on what it adds."""
    spec = pool_spec(catalog, o.pool)
    rack_price = round(catalog.rack.price.usd)
    return Footprint(
        tco_usd=server_unit_tco_usd(spec, catalog, problem, rates) + rates.unit_tco_usd(rack_price, 0, "rack"),
        capex_usd=spec.server_price_usd + spec.cooling_price_usd + rack_price,
        power_w=spec.power_w,
        racks=1,
    )


def least_added(o: TrainingOption, problem: Problem, catalog: Catalog, rates: Rates) -> Footprint:
    """The least a whole-server fabric option adds to any plan (servers, NICs, cables)."""
    spec = pool_spec(catalog, o.pool)
    fabric = catalog.fabrics[o.pool.fabric]
    assert fabric.cable_price is not None
    n = o.held_gpus // spec.gpus_per_server  # hot spares included
    cable = round(fabric.cable_price.usd)
    per_server_tco = server_unit_tco_usd(spec, catalog, problem, rates)
    per_server_tco += spec.nics_per_server * rates.unit_tco_usd(cable, 0, "network")
    site = problem.site
    fit = servers_per_rack(spec, site)
    return Footprint(
        tco_usd=n * per_server_tco,
        capex_usd=n
        * (spec.server_price_usd + spec.cooling_price_usd + spec.nics_per_server * (spec.nic_price_usd + cable)),
        power_w=n * spec.power_w,
        # racks are homogeneous per pool; another job's rack may have up to fit-1 free slots
        racks=0 if not fit else max(0, math.ceil((n - fit + 1) / fit)),
    )


def prune_training(
    options: list[TrainingOption],
    problem: Problem,
    catalog: Catalog,
    has_dependents: bool,
    shared: set[PoolKey] | frozenset[PoolKey] = frozenset(),
) -> list[TrainingOption]:
    """Drop dominated options; never in ``shared`` pools, whose servers another job may
    also use (at another time), so that an option there may add nothing at all."""
    rates = Rates.of(problem)
    singles = [(o, standalone(o, problem, catalog, rates)) for o in options if o.pool.fabric == "none"]
    singles.sort(key=lambda pair: pair[1].tco_usd)
    limited = {g.lower() for g in problem.catalog.stock} if problem.policy.max_gpu_types is None else None
    # another GPU type may be one more type to operate (finance.ops_usd_per_gpu_type_year)
    type_charge = rates.ops_usd_per_gpu_type_year * rates.annuity
    kept = []
    for b in options:
        if b.pool.fabric == "none" or b.pool in shared:
            kept.append(b)
            continue
        low = least_added(b, problem, catalog, rates)
        if not any(
            _dominates(a, up, b, low, problem, has_dependents, limited)
            for a, up in singles
            if up.tco_usd + (type_charge if a.gpu != b.gpu else 0.0) <= low.tco_usd
        ):
            kept.append(b)
    return kept


def _dominates(
    a: TrainingOption,
    up: Footprint,
    b: TrainingOption,
    low: Footprint,
    problem: Problem,
    has_dependents: bool,
    limited: set[str] | None,
) -> bool:
    # a cap on GPU types or on a GPU's stock: only a swap within the same GPU is safe
    restricted = limited is None or a.gpu.lower() in limited
    if restricted and (a.gpu != b.gpu or a.gpus > b.gpus):
        return False
    if has_dependents and a.days > b.days:
        return False
    if problem.finance.budget_usd is not None and up.capex_usd > low.capex_usd:
        return False
    if problem.site.power_kw is not None and up.power_w > low.power_w:
        return False
    return not (problem.site.racks is not None and up.racks > low.racks)
