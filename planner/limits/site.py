"""Site and money: budget, site power, racks, and what one rack holds."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from planner import units as u
from planner.limits.base import Family, Limit, Measured

if TYPE_CHECKING:
    from planner.catalog import Catalog
    from planner.optimize.built import Built
    from planner.schema.problem import Problem


class Budget(Family):
    """Capital spent over all purchase years (nominal dollars) against ``finance.budget_usd``."""

    pattern, unit, prunes_options = "budget", "usd", False

    def limits(self, problem: Problem, catalog: Catalog) -> list[Limit]:
        budget = problem.finance.budget_usd
        return [] if budget is None else [Limit("budget", "finance.budget_usd", budget, elastic=True)]

    def used(self, m: Measured, limit: Limit) -> float:
        return m.capex_usd

    def step(self, limit: Limit, m: Measured, catalog: Catalog) -> float:
        return m.server_price_usd or round(limit.value * 0.05)

    def add(self, b: Built, problem: Problem, catalog: Catalog, limit: Limit, slack: Any) -> None:
        b.model.add(b.capex <= math.floor(limit.value * u.MONEY_PER_USD) + slack).with_name(limit.name)

    def slack_bound(self, limit: Limit) -> int:
        return math.floor(limit.value * u.MONEY_PER_USD) * 1000

    def required(self, limit: Limit, slack: int) -> float:
        return math.floor(limit.value) + slack / u.MONEY_PER_USD

    def scale(self, limit: Limit) -> float:
        return u.MONEY_PER_USD

    def sentence(self, limit: Limit, required: float) -> str:
        return f"raise the budget from ${limit.value:,.0f} to at least ${required:,.0f}"


class SitePower(Family):
    """Facility power (IT nameplate x its PUE: liquid-cooled racks at the liquid PUE) in the peak
    year against ``site.power_kw``."""

    pattern, unit, prunes_options = "site_power", "kw", False

    def limits(self, problem: Problem, catalog: Catalog) -> list[Limit]:
        kw = problem.site.power_kw
        return [] if kw is None else [Limit("site_power", "site.power_kw", kw, elastic=True)]

    def used(self, m: Measured, limit: Limit) -> float:
        return m.facility_kw

    def step(self, limit: Limit, m: Measured, catalog: Catalog) -> float:
        return round(m.server_facility_kw, 3) or round(limit.value * 0.05, 3)

    def add(self, b: Built, problem: Problem, catalog: Catalog, limit: Limit, slack: Any) -> None:
        for facility in b.facility_w_by_year:  # every year: purchases by year add up, retired ones leave
            b.model.add(facility <= u.site_power_limit(limit.value) + slack).with_name(limit.name)

    def slack_bound(self, limit: Limit) -> int:
        return u.site_power_limit(limit.value) * 1000

    def required(self, limit: Limit, slack: int) -> float:
        return u.site_power_kw(u.site_power_limit(limit.value) + slack)

    def scale(self, limit: Limit) -> float:
        return u.w(1.0) * u.PUE_SCALE

    def sentence(self, limit: Limit, required: float) -> str:
        return f"raise site power from {limit.value:g} kW to at least {required:,.3f} kW"


class Racks(Family):
    """Racks for servers and switches against ``site.racks``."""

    pattern, unit, prunes_options = "racks", "racks", False

    def limits(self, problem: Problem, catalog: Catalog) -> list[Limit]:
        racks = problem.site.racks
        return [] if racks is None else [Limit("racks", "site.racks", racks, elastic=True)]

    def used(self, m: Measured, limit: Limit) -> float:
        return m.racks

    def step(self, limit: Limit, m: Measured, catalog: Catalog) -> float:
        return 1

    def add(self, b: Built, problem: Problem, catalog: Catalog, limit: Limit, slack: Any) -> None:
        b.model.add(b.total_racks <= int(limit.value) + slack).with_name(limit.name)

    def slack_bound(self, limit: Limit) -> int:
        return 1_000_000

    def sentence(self, limit: Limit, required: float) -> str:
        return f"raise racks from {limit.value:g} to at least {required:g}"


class RackPower(Family):
    """The fullest rack's IT power against ``site.rack_power_kw``. Enforced where options are
    built: a pool's servers per rack are sized to fit, and a server that fits no rack is no option."""

    pattern, unit = "rack_power", "kw"

    def limits(self, problem: Problem, catalog: Catalog) -> list[Limit]:
        return [Limit("rack_power", "site.rack_power_kw", problem.site.rack_power_kw)]

    def used(self, m: Measured, limit: Limit) -> float:
        return m.max_rack_kw


class RackUnits(Family):
    """The fullest rack's height against ``site.rack_units`` (enforced as rack power is)."""

    pattern, unit = "rack_units", "u"

    def limits(self, problem: Problem, catalog: Catalog) -> list[Limit]:
        return [Limit("rack_units", "site.rack_units", problem.site.rack_units)]

    def used(self, m: Measured, limit: Limit) -> float:
        return m.max_rack_units

    def step(self, limit: Limit, m: Measured, catalog: Catalog) -> float:
        return 1


class AirRackPower(Family):
    """The fullest air-cooled rack's IT power against ``site.air_rack_power_kw`` (what fans and
    room air can shed). Enforced as rack power is: an air-cooled pool's servers per rack are
    sized to it."""

    pattern, unit = "air_rack_power", "kw"

    def limits(self, problem: Problem, catalog: Catalog) -> list[Limit]:
        return [Limit("air_rack_power", "site.air_rack_power_kw", problem.site.air_rack_power_kw)]

    def used(self, m: Measured, limit: Limit) -> float:
        return m.extra.get("max_air_rack_kw", 0.0)
