"""Read a solved model back into plan rows: servers, jobs, replicas, purchase items."""

from __future__ import annotations

from dataclasses import dataclass, replace

from planner import units as u
from planner.catalog import Catalog
from planner.fabric import leaf_ports, network_for, rail_ports
from planner.finance import LineItem
from planner.optimize.built import Built
from planner.optimize.readback_workloads import inference_rows, training_rows
from planner.optimize.solve import Solved
from planner.pricing import decline_per_year, pool_pue, server_price_usd
from planner.schema.plan import InferenceRow, ServerRow, TrainingRow
from planner.schema.problem import Problem


@dataclass
class ReadBack:
    servers: list[ServerRow]
    training: list[TrainingRow]
    inference: list[InferenceRow]
    items: list[LineItem]
    network: list[dict[str, object]]
    racks: int
    rack_units: int
    max_rack_power_w: float
    max_rack_units: int
    max_air_rack_power_w: float = 0.0
    frontend: dict[str, int] | None = None
    storage_tb: int = 0


@dataclass
class _Racks:
    """Racks and their fill, added up over pools and fabrics."""

    racks: int = 0
    rack_units: int = 0
    max_rack_w: float = 0.0
    max_rack_u: int = 0
    max_air_rack_w: float = 0.0  # the fullest air-cooled rack (switches are air-cooled)

    def add(
        self, racks: int, units_total: int, unit_height: int, in_one: int, unit_w: float, cooling: str = "air"
    ) -> None:
        self.racks += racks
        self.rack_units += units_total * unit_height
        self.max_rack_w = max(self.max_rack_w, in_one * unit_w)
        self.max_rack_u = max(self.max_rack_u, in_one * unit_height)
        if cooling == "air":
            self.max_air_rack_w = max(self.max_air_rack_w, in_one * unit_w)


def read_back(b: Built, s: Solved, problem: Problem, catalog: Catalog) -> ReadBack:
    racks = _Racks()
    servers, items = _servers(b, s, problem, catalog, racks)
    network, network_items = _network(b, s, racks)
    frontend, frontend_items = _frontend(b, s, catalog)
    items += network_items + frontend_items + _rack_items(b, s, problem, catalog, racks.racks)
    return ReadBack(
        frontend=frontend,
        storage_tb=frontend["storage_tb"],
        servers=servers,
        training=training_rows(b, s, problem),
        inference=inference_rows(b, s, problem),
        items=items,
        network=network,
        racks=racks.racks,
        rack_units=racks.rack_units,
        max_rack_power_w=racks.max_rack_w,
        max_air_rack_power_w=racks.max_air_rack_w,
        max_rack_units=racks.max_rack_u,
    )


def _servers(
    b: Built, s: Solved, problem: Problem, catalog: Catalog, racks: _Racks
) -> tuple[list[ServerRow], list[LineItem]]:
    """Server rows per pool and purchase year (owned ones apart), with their servers and NICs to buy."""
    servers: list[ServerRow] = []
    items: list[LineItem] = []
    life = problem.finance.hardware_lifetime_years if b.periods > 1 else None
    for key, p in b.pools.items():
        n = s.value(p.servers)
        if n == 0:
            continue
        spec = p.spec
        pool_racks = s.value(p.racks)
        in_racks = n if p.fit_per_rack else 0  # a workstation or edge box fills no rack
        racks.add(pool_racks, in_racks, spec.rack_units, min(n, p.fit_per_rack), spec.power_w, spec.chassis.cooling)
        pue = pool_pue(spec, catalog, problem) if spec.chassis.cooling == "liquid" else None
        gpu = catalog.gpus[key.gpu]
        price_note = (
            "GPU price: your quote (catalog.prices_usd)"
            if catalog.gpu_price_is_quote(key.gpu)
            else f"estimate: GPU ${catalog.gpu_price_usd(key.gpu):,.0f} "
            f"({gpu.price.source.title}, {gpu.price.source.date})"
        )
        bought = [s.value(v) for v in p.bought]
        have, have_racks = b.kept.get(key, (0, 0))
        rows = [(y, count, False) for y, count in enumerate(bought)]
        if have:  # owned servers: their own rows, no capex
            rows = [(0, have, True), (0, bought[0] - have, False), *rows[1:]]
        rows = [r for r in rows if r[1]]
        rack_rows = _racks_by_row(rows, pool_racks, have_racks)
        for (y, count, owned), row_racks in zip(rows, rack_rows, strict=True):
            price = server_price_usd(spec, catalog, problem, y)
            servers.append(
                ServerRow(
                    server=key.server,
                    gpu=key.gpu,
                    gpus_per_server=spec.gpus_per_server,
                    fabric=key.fabric,
                    count=count,
                    unit_price_usd=price,
                    unit_power_w=spec.server_power_w,
                    racks=row_racks,
                    year=y,
                    owned=owned,
                )
            )
            when = (
                f"; bought in year {y} at {decline_per_year(problem, catalog, key.gpu):.0%}/year GPU price decline"
                if y
                else ""
            )
            items.append(
                LineItem(
                    "server",
                    f"{spec.chassis.name} with {spec.gpus_per_server}x {gpu.name}",
                    f"{key.server}+{key.gpu}",
                    count,
                    price,
                    spec.server_power_w,
                    "already owned (--keep)"
                    if owned
                    else f"{price_note}; chassis ${spec.chassis.base_price.usd:,.0f} estimate{when}",
                    year=y,
                    life_years=life,
                    sunk=owned,
                    gpu=key.gpu,
                    pue=pue,
                )
            )
            if spec.cooling_price_usd:
                lc = catalog.liquid_cooling.price_usd_per_kw
                items.append(
                    LineItem(
                        "cooling",
                        f"Direct liquid cooling for one {key.server} ({u.kw(spec.power_w):.1f} kW)",
                        f"liquid-cooling:{key.server}",
                        count,
                        spec.cooling_price_usd,
                        0.0,
                        f"estimate: ${lc.usd:,.0f}/kW ({lc.source.title})",
                        year=y,
                        life_years=life,
                        sunk=owned,
                    )
                )
            if spec.nics_per_server:
                fab = catalog.fabrics[key.fabric]
                assert fab.nic_price
                items.append(
                    LineItem(
                        "network",
                        f"{fab.name} NIC port",
                        f"{key.fabric}:nic",
                        count * spec.nics_per_server,
                        spec.nic_price_usd,
                        spec.nic_power_w,
                        f"estimate ({fab.nic_price.source.title})" + (f"; bought in year {y}" if y else ""),
                        year=y,
                        life_years=life,
                        sunk=owned,
                        pue=pue,
                    )
                )
    return servers, items


def _network(b: Built, s: Solved, racks: _Racks) -> tuple[list[dict[str, object]], list[LineItem]]:
    """Each fabric's switches and cables, as the solver sized them."""
    items: list[LineItem] = []
    network = []
    for fid, f in b.fabrics.items():
        ports = s.value(f.ports)
        if ports == 0:
            continue
        fab = f.fabric
        assert fab.nic_price and fab.switch_price and fab.cable_price
        members = [(p.spec.chassis, s.value(p.servers)) for k, p in b.pools.items() if k.fabric == fid]
        net = network_for(fab, ports, rail_ports(members))
        leaves, spines, uplinks = s.value(f.leaves), s.value(f.spines), s.value(f.uplinks)
        down, up = leaf_ports(fab)
        cables = ports + uplinks
        net_racks = s.value(f.racks)
        racks.add(
            net_racks, leaves + spines, fab.switch_rack_units, min(leaves + spines, f.fit_per_rack), fab.switch_power_w
        )
        network.append(
            {
                "fabric": fid,
                "ports": ports,
                "leaves": leaves,
                "spines": spines,
                "cables": cables,
                "racks": net_racks,
                "cheapest_design": [net.leaves, net.spines, net.cables],
                "topology": fab.topology,
                "oversubscription": f"{down // up}:1" if spines else "1:1",
                "uplinks": uplinks,
            }
        )
        items += [
            LineItem(
                "network",
                f"{fab.name} switch ({fab.switch_radix} ports)",
                f"{fid}:switch",
                leaves + spines,
                float(round(fab.switch_price.usd)),
                fab.switch_power_w,
                f"{fab.topology_name or fab.topology}: {leaves} leaf + {spines} spine; "
                f"estimate ({fab.switch_price.source.title})",
            ),
            LineItem(
                "network",
                f"{fab.name} cable/optics per link",
                f"{fid}:cable",
                cables,
                float(round(fab.cable_price.usd)),
                0.0,
                f"{ports} to NICs + {uplinks} leaf uplinks; estimate ({fab.cable_price.source.title})",
            ),
        ]
    return network, items


def _frontend(b: Built, s: Solved, catalog: Catalog) -> tuple[dict[str, int], list[LineItem]]:
    """Front-end and management Ethernet for the racked servers, and the jobs' storage."""
    fe, st = catalog.frontend, catalog.storage
    switches_v, mgmt_v, racked_v = b.frontend
    switches, mgmt = s.value(switches_v), s.value(mgmt_v)
    racked = racked_v if isinstance(racked_v, int) else s.value(racked_v)
    on = b.storage_on if isinstance(b.storage_on, int) else s.value(b.storage_on)
    tb = b.storage_tb * on
    cables = racked * fe.ports_per_server + b.storage_ports * on
    out = {"servers": racked, "ports": cables, "switches": switches, "mgmt_switches": mgmt, "storage_tb": tb}
    lines = [  # (count, item, sku, price, watts, notes)
        (
            switches,
            f"Front-end Ethernet top-of-rack switch ({fe.switch_ports} ports)",
            "frontend:switch",
            fe.switch_price,
            fe.switch_power_w,
            f"{fe.ports_per_server} links per racked server + storage",
        ),
        (cables, "Front-end Ethernet cable per link", "frontend:cable", fe.cable_price, 0.0, ""),
        (
            mgmt,
            f"Management (out-of-band) switch ({fe.mgmt_switch_ports} ports)",
            "frontend:mgmt-switch",
            fe.mgmt_switch_price,
            fe.mgmt_switch_power_w,
            "one link per racked server and switch",
        ),
    ]
    items = [
        LineItem(
            "network",
            item,
            sku,
            n,
            float(round(price.usd)),
            watts,
            f"{notes + '; ' if notes else ''}estimate ({price.source.title})",
        )
        for n, item, sku, price, watts, notes in lines
        if n
    ]
    if tb:
        items.append(
            LineItem(
                "storage",
                "Shared storage for checkpoints and datasets (usable TB)",
                "storage:tb",
                tb,
                float(round(st.price_usd_per_tb.usd)),
                st.power_w_per_tb,
                f"the jobs' datasets and last {st.checkpoints_kept} checkpoints; "
                f"estimate ({st.price_usd_per_tb.source.title})",
            )
        )
    return out, items


def _rack_items(b: Built, s: Solved, problem: Problem, catalog: Catalog, racks: int) -> list[LineItem]:
    """The racks to buy; racks a kept plan already owns are listed, not bought."""
    items: list[LineItem] = []
    if racks:
        items.append(
            LineItem(
                "rack",
                f"{problem.site.rack_units}U rack with PDUs",
                "rack",
                racks,
                float(round(catalog.rack.price.usd)),
                0.0,
                f"estimate ({catalog.rack.price.source.title})",
            )
        )
    owned_racks = min(racks, sum(min(r, s.value(b.pools[k].racks)) for k, (_, r) in b.kept.items()))
    if owned_racks:  # racks already owned: listed, not bought
        last = items.pop()
        items.append(replace(last, quantity=last.quantity - owned_racks))
        items.append(replace(last, quantity=owned_racks, notes="already owned (--keep)", sunk=True))
        items = [li for li in items if li.quantity]
    existing = min(racks - owned_racks, problem.site.existing_racks)
    if existing:  # the site's own racks: listed, not bought
        first = items.pop(0)
        items.insert(0, replace(first, quantity=first.quantity - existing))
        items.insert(
            1, replace(first, quantity=existing, notes="the site's existing racks (site.existing_racks)", sunk=True)
        )
        items = [li for li in items if li.quantity]
    return items


def _racks_by_row(rows: list[tuple[int, int, bool]], pool_racks: int, have_racks: int) -> list[int]:
    """Racks listed per server row (they hold the pool's peak): owned racks on the owned row,
    the rest with the first purchase."""
    out = [0] * len(rows)
    owned = min(have_racks, pool_racks) if rows and rows[0][2] else 0
    if owned:
        out[0] = owned
    rest = pool_racks - owned
    new = next((i for i, r in enumerate(rows) if not r[2]), 0)
    if rows:
        out[new] += rest
    return out
