"""TCO arithmetic: the one place that turns prices and watts into money over time.

Conventions (pinned by tests):
- Capex is paid at year 0 and is not discounted.
- Opex of year k (k = 1..horizon) is paid at the end of year k and divided by
  (1 + discount_rate)^k: year-1 opex is discounted once, not zero times.
- Energy per year = IT nameplate kW x utilization x 8760 h x price per kWh x PUE.
- Colocation per year = IT nameplate kW x price per kW-month x 12.
- Maintenance per year = maintenance_rate x capex of servers and network (racks
  are furniture: no maintenance contract).
- Operations per year = ops_usd_per_server_year x servers + ops_usd_per_gpu_type_year x the
  GPU types the fleet owns (each type is its own drivers, images, spares and vendor).
- Residual value = residual_value_share x capex of servers and network, received
  at the end of the last year and discounted like that year's opex.
- Depreciation (reported, not a cash flow) is straight-line over the horizon, of
  the capex less the residual value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner import units as u
from planner.schema.problem import Problem

HOURS_PER_YEAR = 8760.0
CATEGORIES = ("server", "network", "rack", "cooling", "storage")
MAINTAINED = frozenset({"server", "network", "storage"})


@dataclass(frozen=True)
class Rates:
    horizon_years: int
    discount_rate: float
    electricity_usd_per_kwh: float
    pue: float
    colocation_usd_per_kw_month: float
    maintenance_rate: float
    utilization: float
    ops_usd_per_server_year: float = 0.0
    residual_value_share: float = 0.0
    ops_usd_per_gpu_type_year: float = 0.0

    @classmethod
    def of(cls, problem: Problem) -> Rates:
        f = problem.finance
        return cls(
            horizon_years=problem.horizon_years,
            discount_rate=f.discount_rate,
            electricity_usd_per_kwh=f.electricity_usd_per_kwh,
            pue=f.pue,
            colocation_usd_per_kw_month=f.colocation_usd_per_kw_month,
            maintenance_rate=f.maintenance_rate,
            utilization=f.utilization,
            ops_usd_per_server_year=f.ops_usd_per_server_year,
            residual_value_share=f.residual_value_share,
            ops_usd_per_gpu_type_year=f.ops_usd_per_gpu_type_year,
        )

    def discount_factor(self, year: int) -> float:
        return 1.0 / (1.0 + self.discount_rate) ** year

    @property
    def annuity(self) -> float:
        """Present value of 1 USD paid at the end of each year 1..horizon."""
        return sum(self.discount_factor(k) for k in range(1, self.horizon_years + 1))

    def energy_usd_per_year(self, power_w: float, pue: float | None = None) -> float:
        """``pue``: the facility PUE where this equipment stands (none: ``finance.pue``)."""
        kw = u.kw(power_w)
        return kw * self.utilization * HOURS_PER_YEAR * self.electricity_usd_per_kwh * (pue or self.pue)

    def colocation_usd_per_year(self, power_w: float) -> float:
        return u.kw(power_w) * self.colocation_usd_per_kw_month * 12

    def maintenance_usd_per_year(self, price_usd: float, category: str) -> float:
        return self.maintenance_rate * price_usd if category in MAINTAINED else 0.0

    def ops_usd_per_year(self, category: str) -> float:
        return self.ops_usd_per_server_year if category == "server" else 0.0

    def residual_usd(self, price_usd: float, category: str) -> float:
        return self.residual_value_share * price_usd if category in MAINTAINED else 0.0

    # Cloud rent: a replica is rented every hour of every year (paid at each year's end);
    # a training job for its started hours, paid by the end of the year its deadline falls in.
    def rent_year(self, deadline_days: float) -> int:
        return max(1, min(self.horizon_years, math.ceil(deadline_days / 365)))

    @staticmethod
    def replica_rent_usd_per_year(gpus: int, usd_per_gpu_hour: float) -> float:
        return gpus * usd_per_gpu_hour * HOURS_PER_YEAR

    @staticmethod
    def job_rent_usd(gpus: int, days: float, usd_per_gpu_hour: float) -> float:
        return gpus * math.ceil(days * 24) * usd_per_gpu_hour

    def replica_rent_pv_usd(self, gpus: int, usd_per_gpu_hour: float) -> float:
        return self.replica_rent_usd_per_year(gpus, usd_per_gpu_hour) * self.annuity

    def job_rent_pv_usd(self, gpus: int, days: float, usd_per_gpu_hour: float, deadline_days: float) -> float:
        return self.job_rent_usd(gpus, days, usd_per_gpu_hour) * self.discount_factor(self.rent_year(deadline_days))

    def service_years(self, bought_year: int = 0, life_years: int | None = None) -> range:
        """The operating years (1..horizon) a unit bought in cash-flow year ``bought_year`` runs."""
        end = self.horizon_years if life_years is None else min(self.horizon_years, bought_year + life_years)
        return range(bought_year + 1, end + 1)

    def running_usd_per_year(self, price_usd: float, power_w: float, category: str, pue: float | None = None) -> float:
        return (
            self.energy_usd_per_year(power_w, pue)
            + self.colocation_usd_per_year(power_w)
            + self.maintenance_usd_per_year(price_usd, category)
            + self.ops_usd_per_year(category)
        )

    def unit_tco_usd(
        self,
        price_usd: float,
        power_w: float,
        category: str,
        bought_year: int = 0,
        life_years: int | None = None,
        pue: float | None = None,
    ) -> float:
        """Present value over the horizon of buying one unit (at the start of operating year
        ``bought_year + 1``) and running it for its service years; resale only if it is still in
        service at the horizon."""
        years = self.service_years(bought_year, life_years)
        running = sum(self.discount_factor(k) for k in years) * self.running_usd_per_year(
            price_usd, power_w, category, pue
        )
        alive = bool(years) and years[-1] == self.horizon_years
        resale = self.residual_usd(price_usd, category) * self.discount_factor(self.horizon_years) if alive else 0.0
        return price_usd * self.discount_factor(bought_year) + running - resale


@dataclass(frozen=True)
class LineItem:
    category: str  # server | network | rack
    item: str
    sku: str
    quantity: int
    unit_price_usd: float
    unit_power_w: float
    notes: str = ""
    breakdown: str = ""  # which TCO bucket the capex goes to: servers | network | racks
    year: int = 0  # cash-flow year of the purchase (0: up front; y: start of operating year y + 1)
    life_years: int | None = None  # years in service; None: to the horizon
    sunk: bool = False  # already owned (--keep): no capex now; it still runs, is maintained and resold
    gpu: str = ""  # a server's GPU type (each owned type adds its yearly operations cost)
    pue: float | None = None  # facility PUE where it stands (liquid-cooled racks); none: finance.pue

    @property
    def extended_price_usd(self) -> float:
        return self.quantity * self.unit_price_usd

    @property
    def power_w(self) -> float:
        return self.quantity * self.unit_power_w


@dataclass(frozen=True)
class CashFlow:
    year: int
    capex_usd: float
    opex_usd: float
    discount_factor: float
    present_value_usd: float
    residual_usd: float = 0.0  # resale received (reduces the year's net cost)
    depreciation_usd: float = 0.0  # reporting only: not part of the present value


@dataclass(frozen=True)
class Money:
    capex_usd: float
    opex_usd_per_year: float
    tco_usd: float
    breakdown_usd: dict[str, float]
    cash_flows: list[CashFlow]


def summarize(items: list[LineItem], rates: Rates, rent_by_year: dict[int, float] | None = None) -> Money:
    """The plan's money; ``rent_by_year`` is cloud rent paid at the end of each year (opex).
    Owned GPU types (servers' GPU ids) each cost ``ops_usd_per_gpu_type_year`` every year."""
    rent = rent_by_year or {}
    types = len({li.gpu for li in items if li.category == "server" and li.gpu})
    fleet_ops = types * rates.ops_usd_per_gpu_type_year
    horizon = rates.horizon_years
    bucket = {"server": "servers", "network": "network", "rack": "racks", "cooling": "cooling", "storage": "storage"}
    parts = ("servers", "network", "racks", "cooling", "storage", "energy", "colocation", "maintenance")
    breakdown = dict.fromkeys(parts, 0.0)
    breakdown |= {"operations": 0.0, "rent": 0.0, "residual": 0.0}
    capex = [0.0] * (horizon + 1)
    owned = [0.0] * (horizon + 1)  # owned hardware's running cost, by year
    back = [0.0] * (horizon + 1)  # resale, by year
    depreciation = [0.0] * (horizon + 1)
    for li in items:
        q, price, watts = li.quantity, li.unit_price_usd, li.unit_power_w
        spent = 0.0 if li.sunk else li.extended_price_usd
        capex[li.year] += spent
        breakdown[bucket[li.category]] += spent * rates.discount_factor(li.year)
        years = rates.service_years(li.year, li.life_years)
        resale = q * rates.residual_usd(price, li.category) if years and years[-1] == horizon else 0.0
        back[horizon] += resale
        for k in years:
            d = rates.discount_factor(k)
            owned[k] += q * rates.running_usd_per_year(price, watts, li.category, li.pue)
            breakdown["energy"] += q * rates.energy_usd_per_year(watts, li.pue) * d
            breakdown["colocation"] += q * rates.colocation_usd_per_year(watts) * d
            breakdown["maintenance"] += q * rates.maintenance_usd_per_year(price, li.category) * d
            breakdown["operations"] += q * rates.ops_usd_per_year(li.category) * d
            depreciation[k] += (spent - resale) / len(years)
    for k in range(1, horizon + 1) if fleet_ops else ():
        owned[k] += fleet_ops
        breakdown["operations"] += fleet_ops * rates.discount_factor(k)
    breakdown["rent"] = sum(v * rates.discount_factor(k) for k, v in rent.items())
    breakdown["residual"] = -back[horizon] * rates.discount_factor(horizon)
    flows = []
    for k in range(horizon + 1):
        d = rates.discount_factor(k)
        spend = owned[k] + rent.get(k, 0.0)
        flows.append(CashFlow(k, capex[k], spend, d, (capex[k] + spend - back[k]) * d, back[k], depreciation[k]))
    # the full fleet's running cost plus the recurring rent (one-off job rents show in their year)
    opex_year = owned[horizon] + min((rent.get(k, 0.0) for k in range(1, horizon + 1)), default=0.0)
    return Money(
        capex_usd=sum(capex),
        opex_usd_per_year=opex_year,
        tco_usd=sum(f.present_value_usd for f in flows),
        breakdown_usd=breakdown,
        cash_flows=flows,
    )
