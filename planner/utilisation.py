"""How busy each owned pool is over the horizon, and what its work would cost rented.

A pool's GPU-days are its GPUs times the days they are in service; its busy GPU-days are the
training jobs' GPUs (their hot spares included) times their days plus the services' GPUs times the days they hold them
(their window, or every day). Read off the plan's rows: the numbers a report shows are the
plan's. Renting is priced from the cloud catalog's on-demand rate whether or not the problem
rents (``finance.rent``): a buyer should know when a mostly idle cluster costs more than
renting its work.
"""

from __future__ import annotations

from collections import defaultdict

from planner.bom import PoolKey, pool_spec
from planner.catalog import Catalog
from planner.finance import Rates
from planner.pricing import server_unit_tco_usd
from planner.schema.plan import AdviceRow, Plan, UtilisationRow
from planner.schema.problem import Problem

IDLE_SHARE = 0.5  # below this busy share a pool gets advice
CLOSE_SHARE = 0.05  # a limit with less slack than this share of it is close

Pool = tuple[str, str, str]  # (chassis, GPU, fabric)


def utilisation(plan: Plan, problem: Problem) -> list[UtilisationRow]:
    days = 365.0 * problem.horizon_years
    life = problem.finance.hardware_lifetime_years if problem.yearly else None
    have: dict[Pool, float] = defaultdict(float)
    for r in plan.servers:
        years = (life or problem.horizon_years) if r.year == 0 else min(life or 99, problem.horizon_years - r.year)
        have[(r.server, r.gpu, r.fabric)] += r.count * r.gpus_per_server * 365.0 * max(0, years)
    busy = _busy_gpu_days(plan, days)
    return [
        UtilisationRow(
            pool="/".join(key),
            gpus=sum(r.count * r.gpus_per_server for r in plan.servers if (r.server, r.gpu, r.fabric) == key),
            gpu_days=round(total, 1),
            busy_gpu_days=round(min(busy[key], total), 1),
            busy_share=round(min(1.0, busy[key] / total), 4) if total else 0.0,
        )
        for key, total in sorted(have.items())
    ]


def _busy_gpu_days(plan: Plan, days: float) -> dict[Pool, float]:
    busy: dict[Pool, float] = defaultdict(float)
    for t in plan.training:
        if not t.rented:
            busy[(t.server, t.gpu, t.fabric)] += t.held_gpus * t.days  # hot spares are held too
    for s in plan.inference:
        held = (s.end_day or days) - (s.start_day or 0.0) if s.year is None else 365.0
        for r in s.replicas:
            if not r.rented:
                busy[(r.server, r.gpu, r.fabric)] += r.count * r.gpus_per_replica * held
    return busy


def idle_advice(plan: Plan, problem: Problem, catalog: Catalog, rates: Rates) -> list[AdviceRow]:
    """A mostly idle pool: its busy share, and what renting its work on demand would cost
    against owning the pool."""
    out = []
    for row in plan.utilisation:
        if row.busy_share >= IDLE_SHARE:
            continue
        server, gpu, fabric = row.pool.split("/")
        message = f"{row.pool}: busy {row.busy_share:.0%} of its GPU-hours over the horizon"
        price = catalog.rent_usd_per_gpu_hour(gpu, "on_demand")
        owned = _owned_pv_usd(plan, problem, catalog, rates, (server, gpu, fabric))
        if price is None:
            out.append(AdviceRow(kind="utilisation", message=message + " (no cloud price to compare)"))
            continue
        rent = _rent_pv_usd(plan, problem, rates, (server, gpu, fabric), price)
        verdict = "less" if rent < owned else "more"
        message += (
            f"; renting its work on demand (${price:.2f}/GPU-hour) would cost ${rent:,.0f} against "
            f"${owned:,.0f} owned: ${abs(owned - rent):,.0f} {verdict}"
        )
        out.append(AdviceRow(kind="utilisation", message=message, usd=round(owned - rent, 2) if rent < owned else None))
    return out


def _owned_pv_usd(plan: Plan, problem: Problem, catalog: Catalog, rates: Rates, key: Pool) -> float:
    """The pool's servers (with NICs and cooling) and racks over the horizon, switches apart."""
    spec = pool_spec(catalog, PoolKey(*key))
    rack = rates.unit_tco_usd(round(catalog.rack.price.usd), 0, "rack")
    total = 0.0
    for r in plan.servers:
        if (r.server, r.gpu, r.fabric) == key and not r.owned:
            total += r.count * server_unit_tco_usd(spec, catalog, problem, rates, r.year) + r.racks * rack
    return total


def _rent_pv_usd(plan: Plan, problem: Problem, rates: Rates, key: Pool, price: float) -> float:
    """The pool's jobs and service replicas rented for the hours they run."""
    total = 0.0
    for t in plan.training:
        if (t.server, t.gpu, t.fabric) == key and not t.rented:
            total += rates.job_rent_pv_usd(t.gpus, t.days, price, t.deadline_days)
    horizon = 365.0 * problem.horizon_years
    for s in plan.inference:
        start, end = (
            (s.start_day or 0.0, s.end_day or horizon) if s.year is None else (365.0 * (s.year - 1), 365.0 * s.year)
        )
        for r in s.replicas:
            if (r.server, r.gpu, r.fabric) != key or r.rented:
                continue
            yearly = rates.replica_rent_usd_per_year(r.count * r.gpus_per_replica, price)
            for k in range(1, problem.horizon_years + 1):  # the share of year k the window covers
                covered = max(0.0, min(end, 365.0 * k) - max(start, 365.0 * (k - 1))) / 365.0
                total += yearly * covered * rates.discount_factor(k)
    return total


def close_limits(plan: Plan) -> list[AdviceRow]:
    """Limits with less than 5% of their value left: the next thing a change would hit."""
    out = []
    for c in plan.constraints:
        if c.limit and c.slack is not None and 0 <= c.slack < CLOSE_SHARE * abs(c.limit) and not c.tight:
            out.append(
                AdviceRow(
                    kind="limit",
                    message=f"{c.name} is close: {c.used:,.6g} {c.unit} of {c.limit:,.6g} "
                    f"({c.slack / c.limit:.1%} left)",
                )
            )
    return out
