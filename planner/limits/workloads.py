"""Workload targets: job deadlines, service demand, and latency targets held at p99."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from planner import units as u
from planner.domains import domains_survived
from planner.limits.base import Family, Limit, Measured

if TYPE_CHECKING:
    from planner.catalog import Catalog
    from planner.optimize.built import Built
    from planner.schema.plan import Plan
    from planner.schema.problem import Problem


class Deadline(Family):
    """A training job's end day against its ``deadline_days`` (sizes too slow are no option)."""

    pattern, unit = "job:<name>:deadline", "days"

    def limits(self, problem: Problem, catalog: Catalog) -> list[Limit]:
        return [
            Limit(f"job:{j.name}:deadline", f"training.{j.name}.deadline_days", j.deadline_days, j.name, True)
            for j in problem.training
        ]

    def used(self, m: Measured, limit: Limit) -> float:
        return m.job_end_day.get(limit.subject, 0.0)

    def add(self, b: Built, problem: Problem, catalog: Catalog, limit: Limit, slack: Any) -> None:
        name = limit.subject
        b.model.add(b.starts[name] + b.durations[name] <= u.days_down(limit.value) + slack).with_name(limit.name)

    def slack_bound(self, limit: Limit) -> int:
        return u.days_up(limit.value + 3650) * 10

    def required(self, limit: Limit, slack: int) -> float:
        return (u.days_down(limit.value) + slack) / u.TIME_PER_DAY

    def scale(self, limit: Limit) -> float:
        return u.TIME_PER_DAY

    def sentence(self, limit: Limit, required: float) -> str:
        return f"extend {limit.subject}'s deadline from {limit.value:g} to at least {required:g} days"


class ServiceRate(Family):
    """The demand a service's replicas carry with their spares down, in its tightest year,
    against the demand (a floor). ``used`` is capacity less the spare replicas, divided by
    ``1 + min_spare_share``: exactly what the model holds at or above the demand."""

    pattern, unit, at_least, prunes_options = "service:<name>:rate", "rps", True, False

    def limits(self, problem: Problem, catalog: Catalog) -> list[Limit]:
        peak = problem.horizon_years
        return [
            Limit(
                f"service:{s.name}:rate",
                f"inference.{s.name}.requests_per_s",
                s.peak_requests_per_s(peak),
                s.name,
                elastic=s.mix is None,  # a mix's routing is an equality per bucket: not elastic
            )
            for s in problem.inference
        ]

    def used(self, m: Measured, limit: Limit) -> float:
        return m.carried_rps.get(limit.subject, 0.0)

    def row_limit(self, limit: Limit, m: Measured) -> float:
        return m.required_rps.get(limit.subject, limit.value)

    def step(self, limit: Limit, m: Measured, catalog: Catalog) -> float:
        return -round(limit.value * 0.1, 6)

    def purchase_unit(self, limit: Limit, m: Measured, catalog: Catalog) -> float:
        return m.smallest_replica_rps.get(limit.subject, 0.0)

    def add(self, b: Built, problem: Problem, catalog: Catalog, limit: Limit, slack: Any) -> None:
        for y, (capacity, need) in enumerate(b.capacity.get(limit.subject, [])):
            name = limit.name if b.periods == 1 else f"{limit.name}@{y + 1}"
            b.model.add(capacity + slack >= need).with_name(name)

    def slack_bound(self, limit: Limit) -> int:
        return u.rps_up(limit.value) * 10

    def required(self, limit: Limit, slack: int) -> float:
        return (u.rps_up(limit.value) - slack) / u.RATE_PER_RPS

    def scale(self, limit: Limit) -> float:
        return u.RATE_PER_RPS

    def sentence(self, limit: Limit, required: float) -> str:
        return f"lower {limit.subject}'s demand from {limit.value:g} to at most {required:g} requests/s"


class _Latency(Family):
    """A latency target, held on the p99 (replica kinds that miss it are no option)."""

    unit = "ms p99"
    key = ""

    def limits(self, problem: Problem, catalog: Catalog) -> list[Limit]:
        return [
            Limit(
                f"service:{s.name}:{self.key}",
                f"inference.{s.name}.{self.key}_ms",
                getattr(s, f"{self.key}_ms"),
                s.name,
            )
            for s in problem.inference
        ]


class ServiceTtft(_Latency):
    pattern, key = "service:<name>:ttft", "ttft"

    def used(self, m: Measured, limit: Limit) -> float:
        return m.ttft_p99_ms.get(limit.subject, 0.0)


class ServiceTpot(_Latency):
    pattern, key = "service:<name>:tpot", "tpot"

    def used(self, m: Measured, limit: Limit) -> float:
        return m.tpot_p99_ms.get(limit.subject, 0.0)


class ServiceSpares(Family):
    """The failure domains (servers, or racks with ``spare_domain: rack``) a service can lose
    and still carry its demand, against ``spare_replicas`` (a floor). Its marginal value is
    what one domain fewer would save: the price of the redundancy."""

    pattern, unit, at_least, prunes_options = "service:<name>:spares", "domains", True, False

    def limits(self, problem: Problem, catalog: Catalog) -> list[Limit]:
        return [
            Limit(f"service:{s.name}:spares", f"inference.{s.name}.spare_replicas", s.spare_replicas, s.name)
            for s in problem.inference
            if s.spare_replicas
        ]

    def used(self, m: Measured, limit: Limit) -> float:
        return m.extra.get(f"spares:{limit.subject}", 0.0)

    def read(self, problem: Problem, plan: Plan, m: Measured) -> None:
        services = {s.name: s for s in problem.inference}
        for row in plan.inference:
            svc = services.get(row.name)
            if svc is not None and svc.spare_replicas:
                key = f"spares:{row.name}"
                m.extra[key] = min(m.extra.get(key, math.inf), domains_survived(row, svc))

    def step(self, limit: Limit, m: Measured, catalog: Catalog) -> float:
        return -1

    def sentence(self, limit: Limit, required: float) -> str:
        return f"hold {limit.subject}'s demand with {required:g} failure domains down instead of {limit.value:g}"
