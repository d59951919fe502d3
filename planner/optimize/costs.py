"""The objective: each unit's price plus its discounted running costs, and cloud rent."""

from __future__ import annotations

from planner import units as u
from planner.catalog import Catalog
from planner.finance import Rates
from planner.optimize.built import Built, Expr
from planner.options.types import InferenceOption, TrainingOption
from planner.pricing import pool_pue, server_price_usd
from planner.schema.problem import Problem


def rent_pv_usd(option: InferenceOption | TrainingOption, problem: Problem, rates: Rates) -> float:
    """Present value of renting one option (one replica, or one training job) from a cloud.

    A replica is rented for every hour of the horizon, paid at the end of each year;
    a job for its hours, paid by the end of the year its deadline falls in.
    """
    price = option.rent_usd_per_gpu_hour or 0.0
    if isinstance(option, InferenceOption):
        return rates.replica_rent_pv_usd(option.gpus_per_replica, price)
    job = next(j for j in problem.training if j.name == option.job)
    return rates.job_rent_pv_usd(option.gpus, option.days, price, job.deadline_days)


def rent(b: Built, problem: Problem, rates: Rates) -> Expr:
    cost: Expr = 0
    for xs in b.train.values():
        cost += sum(u.usd(rent_pv_usd(o, problem, rates)) * x for o, x in xs if o.rent_usd_per_gpu_hour is not None)
    for rs in b.serve.values():
        for o, per_year in rs:
            if o.rent_usd_per_gpu_hour is None:
                continue
            if b.periods == 1:
                cost += u.usd(rent_pv_usd(o, problem, rates)) * per_year[0]
                continue
            yearly = rates.replica_rent_usd_per_year(o.gpus_per_replica, o.rent_usd_per_gpu_hour)
            cost += sum(u.usd(yearly * rates.discount_factor(y + 1)) * r for y, r in enumerate(per_year))
    return cost


def objective(b: Built, problem: Problem, catalog: Catalog, rates: Rates) -> Expr:
    """TCO in whole dollars: each unit's price plus its discounted running costs."""
    life = problem.finance.hardware_lifetime_years if b.periods > 1 else None

    def unit(
        price: float, power_w: float, category: str, year: int = 0, years: int | None = None, pue: float | None = None
    ) -> int:
        return u.usd(rates.unit_tco_usd(round(price), power_w, category, year, years, pue))

    tco: Expr = 0
    for p in b.pools.values():
        s = p.spec
        pue = pool_pue(s, catalog, problem)
        for y, bought in enumerate(p.bought):
            price = server_price_usd(s, catalog, problem, y)
            tco += unit(price, s.server_power_w, "server", y, life, pue) * bought
            tco += unit(s.nic_price_usd, s.nic_power_w, "network", y, life, pue) * s.nics_per_server * bought
            if s.cooling_price_usd:
                tco += unit(s.cooling_price_usd, 0, "cooling", y, life) * bought
    for f in b.fabrics.values():
        fab = f.fabric
        assert fab.switch_price and fab.cable_price
        b.switch_usd[fab.id] = unit(fab.switch_price.usd, fab.switch_power_w, "network")
        tco += b.switch_usd[fab.id] * (f.leaves + f.spines)
        tco += unit(fab.cable_price.usd, 0, "network") * (f.ports + f.uplinks)
    tco += unit(catalog.rack.price.usd, 0, "rack") * b.paid_racks  # the site's own racks are free
    fe, st = catalog.frontend, catalog.storage
    switches, mgmt, racked = b.frontend
    tco += unit(fe.switch_price.usd, fe.switch_power_w, "network") * switches
    tco += unit(fe.mgmt_switch_price.usd, fe.mgmt_switch_power_w, "network") * mgmt
    tco += unit(fe.cable_price.usd, 0, "network") * (racked * fe.ports_per_server + b.storage_ports * b.storage_on)
    if b.storage_tb:  # the jobs' datasets and checkpoints, for a cluster
        tco += unit(st.price_usd_per_tb.usd, st.power_w_per_tb, "storage") * b.storage_tb * b.storage_on
    per_type = rates.ops_usd_per_gpu_type_year * rates.annuity  # each owned type, every year
    b.gpu_type_charge_usd = u.usd(per_type)
    tco += sum(b.gpu_type_charge_usd * flag for flag in b.gpu_type_used.values())
    for key, (have, have_racks) in b.kept.items():  # their prices are sunk; running them is not
        s = b.pools[key].spec
        tco -= (u.usd(s.server_price_usd) + u.usd(s.nic_price_usd) * s.nics_per_server) * have
        tco -= u.usd(s.cooling_price_usd) * have
        tco -= u.usd(round(catalog.rack.price.usd)) * have_racks
    return tco
