"""Bill of materials: what one server, one rack and one network fabric cost and draw.

Rules (used by the optimiser, the verifier and the reports alike):
- A pool is servers of one chassis, one GPU type and one scale-out fabric.
- A server's price is its chassis plus its GPUs; its scale-out NICs are network items.
- Prices are whole dollars: the optimiser, the verifier and the purchase list use the same.
- Racks are homogeneous: one pool per rack, as many servers as fit by units and power; an
  air-cooled rack holds no more than ``site.air_rack_power_kw``.
- Liquid-cooled chassis pay ``liquid_cooling.price_usd_per_kw`` per kW of their IT power and run
  at the liquid PUE; everything else at ``finance.pue``.
- Each fabric is a two-tier leaf/spine network in its topology (``planner.fabric``: a
  non-blocking fat tree, 2:1 oversubscribed, or rail-optimised), sized from its NIC ports.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner import units as u
from planner.catalog import Catalog
from planner.schema.catalog import ServerChassis
from planner.schema.problem import Site


@dataclass(frozen=True, order=True)
class PoolKey:
    server: str
    gpu: str
    fabric: str

    def label(self) -> str:
        return f"{self.server}/{self.gpu}/{self.fabric}"


@dataclass(frozen=True)
class PoolSpec:
    key: PoolKey
    chassis: ServerChassis
    gpus_per_server: int
    server_price_usd: float
    server_power_w: float  # chassis + GPUs
    nics_per_server: int
    nic_price_usd: float
    nic_power_w: float
    rack_units: int
    cooling_price_usd: float = 0.0  # liquid cooling for one server (its IT kW at the catalog's $/kW)

    @property
    def power_w(self) -> float:
        """IT power of one server with its NICs (what a rack and the site must supply)."""
        return self.server_power_w + self.nics_per_server * self.nic_power_w


def buyable(catalog: Catalog, key: PoolKey) -> bool:
    """Whether this catalog sells the pool's chassis with its GPU on its fabric (a scenario may
    exclude parts another one buys)."""
    chassis = catalog.servers.get(key.server)
    return chassis is not None and key.gpu in chassis.gpus and key.gpu in catalog.gpus and key.fabric in catalog.fabrics


def pool_spec(catalog: Catalog, key: PoolKey) -> PoolSpec:
    chassis = catalog.servers[key.server]
    gpu = catalog.gpus[key.gpu]
    fabric = catalog.fabrics[key.fabric]
    n = chassis.gpus_per_server
    nics = chassis.scaleout_nics if fabric.kind != "none" else 0
    nic_w = fabric.nic_power_w
    it_kw = u.kw(chassis.base_power_w + n * gpu.tdp_w + nics * nic_w)
    liquid = chassis.cooling == "liquid"
    return PoolSpec(
        key=key,
        chassis=chassis,
        gpus_per_server=n,
        server_price_usd=float(round(chassis.base_price.usd + n * catalog.gpu_price_usd(key.gpu))),
        server_power_w=chassis.base_power_w + n * gpu.tdp_w,
        nics_per_server=nics,
        nic_price_usd=float(round(fabric.nic_price.usd)) if fabric.nic_price else 0.0,
        nic_power_w=fabric.nic_power_w,
        rack_units=chassis.rack_units,
        cooling_price_usd=float(round(it_kw * catalog.liquid_cooling.price_usd_per_kw.usd)) if liquid else 0.0,
    )


def per_rack(units: int, power_w: float, rack_units: int, rack_power_kw: float) -> int:
    """How many identical items fit one rack by units and by power."""
    if units <= 0 or power_w <= 0:
        return 0
    return max(0, min(rack_units // units, int(u.w(rack_power_kw) // power_w)))


def servers_per_rack(spec: PoolSpec, site: Site) -> int | None:
    """How many of a pool's servers one rack holds (by units, and by the rack power its cooling
    allows); None when the chassis stands outside racks (a desk-side workstation, an edge box):
    it needs neither rack space nor rack power."""
    if not spec.chassis.needs_rack:
        return None
    return per_rack(spec.rack_units, spec.power_w, site.rack_units, rack_power_kw(spec.chassis.cooling, site))


def rack_power_kw(cooling: str, site: Site) -> float:
    """IT power one rack may hold: an air-cooled rack no more than air can shed."""
    if cooling == "air":
        return min(site.rack_power_kw, site.air_rack_power_kw)
    return site.rack_power_kw


def pue_of(cooling: str, site: Site, air_pue: float, liquid_pue: float) -> float:
    """Facility PUE for equipment cooled this way (``site.liquid_pue`` over the catalog's)."""
    if cooling == "liquid":
        return site.liquid_pue if site.liquid_pue is not None else liquid_pue
    return air_pue


def racks_needed(count: int, fit: int) -> int:
    if count == 0:
        return 0
    return math.ceil(count / fit)
