"""Purchase policy: stock per GPU and year, and how many GPU types to operate."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from planner.limits.base import Family, Limit, Measured

if TYPE_CHECKING:
    from planner.catalog import Catalog
    from planner.optimize.built import Built
    from planner.schema.problem import Problem


class Stock(Family):
    """GPUs of one type bought in any one purchase year against ``catalog.stock.<gpu>``.
    It also prunes options: a pool whose one server needs more GPUs than the stock is none."""

    pattern, unit = "stock:<gpu>", "gpus"

    def limits(self, problem: Problem, catalog: Catalog) -> list[Limit]:
        out = []
        for gpu, units in problem.catalog.stock.items():
            found = catalog.find_gpu_id(gpu)
            out.append(Limit(f"stock:{gpu}", f"catalog.stock.{gpu}", units, found or gpu))
        return out

    def used(self, m: Measured, limit: Limit) -> float:
        return m.gpus_in_busiest_year.get(limit.subject, 0)

    def step(self, limit: Limit, m: Measured, catalog: Catalog) -> float:
        sizes = [s.gpus_per_server for s in catalog.servers.values() if limit.subject in s.gpus]
        return min(sizes, default=8)

    def add(self, b: Built, problem: Problem, catalog: Catalog, limit: Limit, slack: Any) -> None:
        pools = [p for key, p in b.pools.items() if key.gpu == limit.subject]
        for y in range(b.periods) if pools else []:
            bought = sum(p.spec.gpus_per_server * p.bought[y] for p in pools)
            b.model.add(bought <= int(limit.value) + slack).with_name(limit.name)


class MaxGpuTypes(Family):
    """Distinct GPU types bought against ``policy.max_gpu_types``."""

    pattern, unit, prunes_options = "policy:max_gpu_types", "types", False

    def limits(self, problem: Problem, catalog: Catalog) -> list[Limit]:
        k = problem.policy.max_gpu_types
        return [] if k is None else [Limit("policy:max_gpu_types", "policy.max_gpu_types", k)]

    def used(self, m: Measured, limit: Limit) -> float:
        return m.gpu_types

    def step(self, limit: Limit, m: Measured, catalog: Catalog) -> float:
        return 1

    def add(self, b: Built, problem: Problem, catalog: Catalog, limit: Limit, slack: Any) -> None:
        b.model.add(sum(b.gpu_type_used.values()) <= int(limit.value) + slack).with_name(limit.name)
