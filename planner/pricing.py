"""Prices by purchase year: GPUs get cheaper (``catalog.price_decline_per_year``), chassis do not.

One rule used by the optimiser, the purchase list and the verifier alike. A server
bought at the start of year ``y`` (cash-flow row ``y``; 0 = today) costs its chassis
plus its GPUs at ``price x (1 - decline)^y``, in whole dollars.
"""

from __future__ import annotations

from planner.bom import PoolSpec
from planner.catalog import Catalog
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
