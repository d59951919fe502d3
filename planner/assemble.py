"""A plan read out of a solved model: quantities, money, limits, cost attribution and the
assumptions it rests on. Everything here is a read-out; nothing changes the solution."""

from __future__ import annotations

from planner import units as u
from planner.bom import PoolKey, pool_spec
from planner.catalog import Catalog
from planner.context import Context
from planner.finance import LineItem, Rates, summarize
from planner.limits.measure import measure
from planner.limits.table import constraint_rows
from planner.optimize.built import Built
from planner.optimize.readback import ReadBack, read_back
from planner.optimize.solve import Solved
from planner.part_notes import part_notes
from planner.pricing import server_unit_tco_usd
from planner.schema.fabric import Fabric
from planner.schema.plan import AdviceRow, CashFlowRow, Plan, PurchaseRow
from planner.schema.problem import Problem
from planner.utilisation import close_limits, idle_advice, utilisation


def assemble_plan(ctx: Context, built: Built, solved: Solved) -> Plan:
    p, catalog = ctx.problem, ctx.catalog
    rb = read_back(built, solved, p, catalog)
    rates = Rates.of(p)
    money = summarize(rb.items, rates, _rent_by_year(rb, rates))

    # the most IT (and facility) power installed in any year (purchases by year add up; retired ones leave)
    def installed(k: int) -> list[LineItem]:
        return [li for li in rb.items if k in rates.service_years(li.year, li.life_years)]

    years = range(1, p.horizon_years + 1)
    it_w = max((sum(li.power_w for li in installed(k)) for k in years), default=0.0)
    facility_w = max((sum(li.power_w * (li.pue or p.finance.pue) for li in installed(k)) for k in years), default=0.0)
    gpus: dict[str, int] = {}
    for row in rb.servers:
        gpus[row.gpu] = gpus.get(row.gpu, 0) + row.count * row.gpus_per_server
    per_gpu = _attribute_costs(rb, p, catalog, rates)
    assert solved.status in ("optimal", "feasible"), "a plan is read from a solution"
    plan = Plan(
        problem=p.name,
        status=solved.status,
        gap=solved.gap,
        solve_seconds=round(solved.seconds, 3),
        tco_usd=round(money.tco_usd, 2),
        rent_usd_per_hour=round(_rent_per_hour(rb), 4),
        capex_usd=round(money.capex_usd, 2),
        opex_usd_per_year=round(money.opex_usd_per_year, 2),
        tco_breakdown_usd={k: round(v, 2) for k, v in money.breakdown_usd.items()},
        it_power_kw=round(u.kw(it_w), 3),
        facility_power_kw=round(u.kw(facility_w), 3),
        racks=rb.racks,
        rack_units=rb.rack_units,
        max_rack_power_kw=round(u.kw(rb.max_rack_power_w), 3),
        max_air_rack_power_kw=round(u.kw(rb.max_air_rack_power_w), 3),
        max_rack_units=rb.max_rack_units,
        gpus=dict(sorted(gpus.items())),
        servers=rb.servers,
        network=rb.network,
        frontend=rb.frontend or {},
        storage_tb=rb.storage_tb,
        training=rb.training,
        inference=rb.inference,
        purchase=[
            PurchaseRow(
                category=li.category,
                item=li.item,
                sku=li.sku,
                quantity=li.quantity,
                unit_price_usd=li.unit_price_usd,
                extended_price_usd=li.extended_price_usd,
                unit_power_w=li.unit_power_w,
                notes=li.notes,
                year=li.year,
            )
            for li in rb.items
            if not li.sunk  # already owned: not on the purchase list
        ],
        cash_flows=[CashFlowRow(**vars(f)) for f in money.cash_flows],
        assumptions=_assumptions(ctx, gpus, [str(n["fabric"]) for n in rb.network]),
        rent_vs_buy=_rent_vs_buy(per_gpu, catalog, rates),
    )
    # the limits report reads the plan itself: it cannot say what the plan does not hold
    plan.constraints = constraint_rows(p, catalog, measure(p, plan))
    plan.utilisation = utilisation(plan, p)
    plan.advice = part_notes(plan.servers, catalog) + _simplicity(solved, plan, p)
    plan.advice += idle_advice(plan, p, catalog, rates) + close_limits(plan)
    return plan


def _simplicity(solved: Solved, plan: Plan, p: Problem) -> list[AdviceRow]:
    """What the simpler fleet costs against the cheapest plan found (policy.simplicity_tolerance)."""
    if solved.cheapest is None or solved.objective <= solved.cheapest + 0.5:
        return []
    premium = solved.objective - solved.cheapest
    types = len(plan.gpus)
    message = (
        f"a simpler fleet: {types} GPU type{'s' if types != 1 else ''} where the cheapest plan found uses "
        f"{solved.cheapest_gpu_types}; it costs ${premium:,.0f} ({premium / solved.cheapest:.2%}) more "
        f"(policy.simplicity_tolerance {p.policy.simplicity_tolerance:.0%}; set it to 0 for the cheapest plan)"
    )
    return [AdviceRow(kind="simplicity", message=message, usd=round(premium, 2))]


def _rent_by_year(rb: ReadBack, rates: Rates) -> dict[int, float]:
    """Cloud rent paid at the end of each year: services every year, jobs in their deadline's year."""
    rent = {k: 0.0 for k in range(1, rates.horizon_years + 1)}
    for s in rb.inference:
        for r in s.replicas:
            if r.rented:
                for k in rent if s.year is None else [s.year]:
                    rent[k] += r.count * rates.replica_rent_usd_per_year(
                        r.gpus_per_replica, r.rent_usd_per_gpu_hour or 0.0
                    )
    for t in rb.training:
        if t.rented:
            rent[rates.rent_year(t.deadline_days)] += rates.job_rent_usd(t.gpus, t.days, t.rent_usd_per_gpu_hour or 0.0)
    return {k: v for k, v in rent.items() if v}


def _rent_per_hour(rb: ReadBack) -> float:
    """The hourly bill of the GPUs services rent in the first year."""
    return sum(
        r.count * r.gpus_per_replica * (r.rent_usd_per_gpu_hour or 0.0)
        for s in rb.inference
        if s.year in (None, 1)
        for r in s.replicas
        if r.rented
    )


def _attribute_costs(rb: ReadBack, p: Problem, catalog: Catalog, rates: Rates) -> dict[tuple[str, str, str], float]:
    """Each workload's share of the TCO, by the GPUs it holds (shared switches excluded).

    A GPU costs its server's and NICs' unit TCO and its rack share, divided by the
    GPUs per server. A service holds its GPUs for the whole horizon; a training job
    (with its hot spares) for its days only. Tokens are output tokens at the demand times `utilization`
    (the average load as a share of the peak).
    """
    per_gpu: dict[tuple[str, str, str], float] = {}
    rack = rates.unit_tco_usd(round(catalog.rack.price.usd), 0, "rack")
    for row in rb.servers:
        if (row.server, row.gpu, row.fabric) in per_gpu:
            continue  # bought again in a later year: priced like the first purchase
        spec = pool_spec(catalog, PoolKey(row.server, row.gpu, row.fabric))
        unit = server_unit_tco_usd(spec, catalog, p, rates)
        unit += rack * row.racks / row.count
        per_gpu[(row.server, row.gpu, row.fabric)] = unit / row.gpus_per_server
    horizon_days = p.horizon_years * 365.0
    for t in rb.training:
        share = min(1.0, t.days / horizon_days)
        if t.rented:
            pv = rates.job_rent_pv_usd(t.gpus, t.days, t.rent_usd_per_gpu_hour or 0.0, t.deadline_days)
            t.cost_usd = round(pv, 2)
        else:
            t.cost_usd = round(t.held_gpus * per_gpu.get((t.server, t.gpu, t.fabric), 0.0) * share, 2)
    services = {s.name: s for s in p.inference}
    for svc in rb.inference:
        # a plan by year: each year's row bears a year of its GPUs' cost (a year of rent, paid at its end)
        share = 1.0 if svc.year is None else 1.0 / p.horizon_years
        years = p.horizon_years if svc.year is None else 1
        cost = sum(
            r.count
            * r.gpus_per_replica
            * (
                (
                    rates.replica_rent_pv_usd(1, r.rent_usd_per_gpu_hour or 0.0)
                    if svc.year is None
                    else rates.replica_rent_usd_per_year(1, r.rent_usd_per_gpu_hour or 0.0)
                    * rates.discount_factor(svc.year)
                )
                if r.rented
                else per_gpu.get((r.server, r.gpu, "none"), 0.0) * share
            )
            for r in svc.replicas
        )
        svc.cost_usd = round(cost, 2)
        service = services[svc.name]
        if not service.generic:
            out: float = service.output_tokens
            if service.mix is not None:
                out = sum(b.share * b.output_tokens for b in service.mix.sized)
            tokens = svc.required_rps * out * 3600 * 8760 * years * p.finance.utilization
            svc.cost_usd_per_million_tokens = round(cost / tokens * 1e6, 4) if tokens else None
    return per_gpu


def _rent_vs_buy(
    per_gpu: dict[tuple[str, str, str], float], catalog: Catalog, rates: Rates
) -> dict[str, dict[str, float]]:
    """Break-even utilisation of each owned GPU type: owning it costs as much as renting it
    for that share of the horizon's hours (above it, owning is cheaper)."""
    own: dict[str, float] = {}
    for (_, gpu, _), pv in per_gpu.items():  # a GPU in two chassis: the cheaper way to own it
        own[gpu] = min(pv, own.get(gpu, pv))
    out: dict[str, dict[str, float]] = {}
    for gpu, own_pv in sorted(own.items()):
        for pricing in ("on_demand", "reserved"):
            price = catalog.rent_usd_per_gpu_hour(gpu, pricing)
            if price is None:
                continue
            row = out.setdefault(gpu, {"own_usd_per_gpu": round(own_pv, 2)})
            row[f"{pricing}_usd_per_gpu_hour"] = price
            row[f"break_even_utilization_{pricing}"] = round(own_pv / rates.replica_rent_pv_usd(1, price), 4)
    return out


def _topology(fabric: Fabric) -> dict[str, object]:
    """A fabric's topology and what it assumes of training across servers."""
    src = fabric.topology_source
    return {
        "topology": fabric.topology,
        "training_scaling": fabric.training_scaling,
        "topology_scaling_beyond_one_hop": fabric.topology_scaling,
        "source": f"{src.title} ({src.date})" if src else "",
    }


def finance_assumptions(p: Problem) -> dict[str, object]:
    return {
        "horizon_years": p.horizon_years,
        "finance": p.finance.model_dump(),
        "site": p.site.model_dump(),
        "discounting": "capex at year 0; opex of year k (1..horizon) divided by (1+discount_rate)^k",
        "energy": "IT nameplate kW x utilization x 8760 h x electricity price x PUE",
        "maintenance": "maintenance_rate x capex of servers and network per year",
        "operations": "ops_usd_per_server_year x servers, per year",
        "residual": "residual_value_share x capex of servers and network, received at the end of the horizon",
        "depreciation": "straight-line over the horizon, of capex less residual value (reporting only)",
        "workload_costs": "a workload's GPUs' share of their pools' TCO (services: the horizon; jobs: their "
        "days); cost per million output tokens at demand x utilization",
    }


def _assumptions(ctx: Context, gpus: dict[str, int], fabrics: list[str]) -> dict[str, object]:
    catalog = ctx.catalog
    eff = catalog.efficiency
    used = [catalog.gpus[g] for g in gpus]
    return {
        **finance_assumptions(ctx.problem),
        "gpu_prices": {
            g.id: {
                "usd": catalog.gpu_price_usd(g.id),
                "estimate": not catalog.gpu_price_is_quote(g.id),
                "source": "problem file (catalog.prices_usd)"
                if catalog.gpu_price_is_quote(g.id)
                else f"{g.price.source.title} ({g.price.source.date})",
            }
            for g in used
        },
        "efficiency": {
            g.generation: eff.generations[g.generation].model_dump(mode="json", exclude={"source", "notes"})
            for g in used
        },
        "serving": eff.serving.model_dump(mode="json", exclude={"source"}),
        "training": eff.training.model_dump(
            mode="json", exclude={"source": True, "interruptions": {"source": True, "notes": True}}
        ),
        "racks": "homogeneous racks: one pool (chassis, GPU, fabric) per rack; switches in network racks",
        "network": "two-tier leaf/spine per fabric in its topology: a non-blocking fat tree is one switch while "
        "the ports fit, else leaves with half their ports up; 2:1 oversubscribed leaves have a third up; "
        "rail-optimised leaves take one NIC rail each (at least one leaf per rail)",
        "fabric_topologies": {f: _topology(catalog.fabrics[f]) for f in fabrics},
        "inference_capacity": "replicas planned at `headroom` of their modelled throughput",
        "training_sharing": "jobs that do not overlap in time share a pool's GPUs; services hold theirs all along",
        "catalog_exclude": ctx.problem.catalog.exclude,
    }
