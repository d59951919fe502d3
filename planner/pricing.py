"""Prices by purchase year: GPUs get cheaper (``catalog.price_decline_per_year``), chassis do not.

One rule used by the optimiser, the purchase list and the verifier alike. A server
bought at the start of year ``y`` (cash-flow row ``y``; 0 = today) costs its chassis
plus its GPUs at ``price x (1 - decline)^y``, in whole dollars.
"""

from __future__ import annotations

from planner.bom import PoolSpec, pue_of
from planner.catalog import Catalog
from planner.finance import Rates
from planner.schema.problem import Problem


def decline_per_year(problem: Problem, catalog: Catalog, gpu_id: str) -> float:
    table = {(catalog.find_gpu_id(k) or k).lower(): v for k, v in problem.catalog.price_decline_per_year.items()}
    return table.get(gpu_id.lower(), table.get("default", 0.0))


def server_price_usd(spec: PoolSpec, catalog: Catalog, problem: Problem, year: int) -> float:
    if year == 0:
        return spec.server_price_usd
    factor = (1 - decline_per_year(problem, catalog, spec.key.gpu)) ** year
    gpus = spec.gpus_per_server * catalog.gpu_price_usd(spec.key.gpu) * factor
    return float(round(spec.chassis.base_price.usd + gpus))


def pool_pue(spec: PoolSpec, catalog: Catalog, problem: Problem) -> float:
    """The facility PUE a pool's servers (and their NICs) run at: liquid-cooled racks at the
    liquid PUE, everything else at ``finance.pue``."""
    return pue_of(spec.chassis.cooling, problem.site, problem.finance.pue, catalog.liquid_cooling.pue)


def server_unit_tco_usd(
    spec: PoolSpec, catalog: Catalog, problem: Problem, rates: Rates, year: int = 0, life: int | None = None
) -> float:
    """Present value of one server of a pool with its NICs and its liquid cooling (if any):
    what one more server adds, racks and switches apart."""
    pue = pool_pue(spec, catalog, problem)
    price = server_price_usd(spec, catalog, problem, year)
    out = rates.unit_tco_usd(price, spec.server_power_w, "server", year, life, pue)
    out += spec.nics_per_server * rates.unit_tco_usd(spec.nic_price_usd, spec.nic_power_w, "network", year, life, pue)
    if spec.cooling_price_usd:
        out += rates.unit_tco_usd(spec.cooling_price_usd, 0, "cooling", year, life)
    return out
