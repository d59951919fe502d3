"""How many servers of one pool (chassis, GPU, fabric) a problem could ever buy."""

from __future__ import annotations

from collections.abc import Collection

from planner import units as u
from planner.bom import PoolKey, pool_spec, pue_of, rack_power_kw, servers_per_rack
from planner.catalog import Catalog
from planner.fabric import fits, max_servers
from planner.pricing import server_price_usd
from planner.schema.problem import Problem

# Pools beyond these sizes are outside what the model describes (two-tier networks,
# a single site): a cap, not a limit anyone would want to relax.
MAX_SERVERS_PER_POOL = 100_000


RELAXABLE_BOUNDS = ("budget", "site_power", "racks")


def pool_limit(problem: Problem, catalog: Catalog, key: PoolKey, ignore: Collection[str] = ()) -> tuple[int, str]:
    """An upper bound on servers in a pool, with the reason when it is 0.

    Physical bounds (one server must fit a rack; stock) reject a pool outright.
    The site's budget, power and racks also bound it, unless named in ``ignore``:
    a diagnosis relaxes those limits and must not be cut off by them.
    """
    spec = pool_spec(catalog, key)
    site = problem.site
    cooling = spec.chassis.cooling
    if cooling == "liquid" and site.cooling == "air":
        return 0, f"{key.server} is liquid-cooled; site.cooling is air"
    fit = servers_per_rack(spec, site)
    if fit == 0:
        return 0, (
            f"one {key.server} server ({spec.rack_units}U, {u.kw(spec.power_w):.1f} kW) does not fit "
            f"a {site.rack_units}U / {rack_power_kw(cooling, site):g} kW rack ({cooling}-cooled)"
        )
    fabric = catalog.fabrics[key.fabric]
    if not fits(fabric, spec.chassis):
        nics = spec.chassis.scaleout_nics
        return 0, f"{key.server} has {nics or 'no'} scale-out NIC{'s' if nics != 1 else ''}: cannot join {key.fabric}"
    bounds = [MAX_SERVERS_PER_POOL]
    if spec.nics_per_server:
        bounds.append(max_servers(fabric, spec.chassis))  # what two tiers of this topology reach
    stock = {catalog.gpu(k).id: v for k, v in problem.catalog.stock.items()}
    if key.gpu in stock:  # per year: a plan by year may buy it every year
        bounds.append(stock[key.gpu] // spec.gpus_per_server * (problem.horizon_years if problem.yearly else 1))
        if bounds[-1] == 0:
            return 0, f"stock: only {stock[key.gpu]} x {key.gpu} available, a server holds {spec.gpus_per_server}"
    if site.racks is not None and "racks" not in ignore and fit is not None:
        bounds.append(site.racks * fit)
    if site.power_kw is not None and "site_power" not in ignore:
        pue = pue_of(cooling, site, problem.finance.pue, catalog.liquid_cooling.pue)
        bounds.append(int(u.w(site.power_kw) / pue // spec.power_w))
    if problem.finance.budget_usd is not None and "budget" not in ignore:
        cheapest = server_price_usd(spec, catalog, problem, problem.horizon_years - 1 if problem.yearly else 0)
        bounds.append(int(problem.finance.budget_usd // cheapest))
    return min(bounds), ""


class OptionLimits:
    """``pool_limit`` per pool as option enumeration asks it, kept per key: the relaxable site
    limits ignored (when they rule a GPU out, the solver's diagnosis says by how much, instead
    of the GPU vanishing from the options). A plain object, so worker processes get a copy."""

    def __init__(self, problem: Problem, catalog: Catalog) -> None:
        self.problem, self.catalog = problem, catalog
        self._kept: dict[PoolKey, tuple[int, str]] = {}

    def __call__(self, key: PoolKey) -> tuple[int, str]:
        if key not in self._kept:
            self._kept[key] = pool_limit(self.problem, self.catalog, key, ignore=RELAXABLE_BOUNDS)
        return self._kept[key]
