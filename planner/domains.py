"""Failure domains: what one failed server (or rack) takes out of a service.

Rules (the optimiser, the readback and the verifier use the same):
- A *server* domain is the unit that fails and is swapped alone: the server, or one compute
  tray on rack-scale systems (NVL72: 4 GPUs). A *rack* domain is one rack of a pool: the
  servers that fit it (racks are homogeneous, ``planner.bom``), or the box itself for a
  chassis that stands outside racks.
- Replica sizes divide the server and each other (``planner.perf.links.packing_sizes``), so a
  replica never straddles two servers; one larger than a tray spans whole trays, and one
  tray failure takes the whole replica down.
- Replicas are packed largest first, a kind's replicas next to each other, so a domain
  holds at most ``min(count, domain GPUs // GPUs per replica)`` replicas of a kind.
  A service with spares runs one replica kind per pool (as operators deploy a model on one
  GPU type), so that is exactly what it loses when the worst domain fails.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from planner.bom import PoolKey, pool_spec, servers_per_rack
from planner.catalog import Catalog
from planner.schema.catalog import ServerChassis
from planner.schema.plan import InferenceRow, Plan, ReplicaRow
from planner.schema.problem import InferenceService, Problem, Site

Domain = Literal["server", "rack"]


def domain_gpus(chassis: ServerChassis, servers_per_rack: int | None, domain: Domain) -> int:
    """GPUs that fail together in one domain of a pool."""
    if domain == "server":
        return chassis.gpus_per_tray or chassis.gpus_per_server
    return chassis.gpus_per_server * max(1, servers_per_rack or 1)


def replicas_per_domain(
    gpus_per_replica: int, chassis: ServerChassis, servers_per_rack: int | None, domain: Domain
) -> int:
    """The most replicas of one kind a single failure takes down (1 for a replica wider than
    the domain: it spans whole trays and dies with any of them)."""
    return max(1, domain_gpus(chassis, servers_per_rack, domain) // gpus_per_replica)


@dataclass(frozen=True)
class Group:
    """Replicas of one kind of one service in one pool."""

    service: str
    kind: int  # index into the service's replica rows
    gpus_per_replica: int
    count: int


def place(groups: Iterable[Group], unit_gpus: int) -> list[dict[tuple[str, int], int]]:
    """An operator's placement of a pool's replicas on its failure units: largest replicas
    first, each kind's next to each other, filling unit after unit. Returns, per unit, the
    replicas of each (service, kind) it holds. Sizes that divide each other and the unit pack
    without gaps (the optimiser counts GPUs only)."""
    units: list[dict[tuple[str, int], int]] = []
    free = 0
    for g in sorted(groups, key=lambda g: (-g.gpus_per_replica, g.service, g.kind)):
        for _ in range(g.count):
            if g.gpus_per_replica > unit_gpus:  # spans whole units: its own, all lost together
                units += [{(g.service, g.kind): 1} for _ in range(g.gpus_per_replica // unit_gpus)]
                free = 0
                continue
            if free < g.gpus_per_replica:
                units.append({})
                free = unit_gpus
            units[-1][(g.service, g.kind)] = units[-1].get((g.service, g.kind), 0) + 1
            free -= g.gpus_per_replica
    return units


def pool_replicas_per_domain(key: PoolKey, gpus_per_replica: int, catalog: Catalog, site: Site, domain: Domain) -> int:
    """``replicas_per_domain`` for a replica kind in a pool (owned or rented: a cloud's servers
    fail the same way)."""
    spec = pool_spec(catalog, key)
    return replicas_per_domain(gpus_per_replica, spec.chassis, servers_per_rack(spec, site), domain)


Lost = dict[int, int]  # replica kind (index into the row's replicas) -> replicas down


def domain_losses(problem: Problem, catalog: Catalog, plan: Plan) -> dict[tuple[str, int | None], list[Lost]]:
    """Per service row (name, year): for each failure domain (of the service's ``spare_domain``)
    holding some of its replicas, the replicas per kind it holds."""
    services = {s.name: s for s in problem.inference}
    by_pool: dict[tuple[int | None, PoolKey, bool, Domain], list[Group]] = {}
    for row in plan.inference:
        svc = services.get(row.name)
        if svc is None:
            continue
        for kind, rep in enumerate(row.replicas):
            key = PoolKey(rep.server, rep.gpu, rep.fabric)
            pool = (row.year, key, rep.rented, svc.spare_domain)
            by_pool.setdefault(pool, []).append(Group(row.name, kind, rep.gpus_per_replica, rep.count))
    out: dict[tuple[str, int | None], list[Lost]] = {}
    for (year, key, _, domain), groups in sorted(by_pool.items(), key=lambda kv: repr(kv[0])):
        if key.server not in catalog.servers or key.gpu not in catalog.gpus or key.fabric not in catalog.fabrics:
            continue  # the hardware check reports it
        spec = pool_spec(catalog, key)
        size = domain_gpus(spec.chassis, servers_per_rack(spec, problem.site), domain)
        for unit in place(groups, size):
            held: dict[str, Lost] = {}
            for (service, kind), n in unit.items():
                held.setdefault(service, {})[kind] = n
            for service, lost in held.items():
                out.setdefault((service, year), []).append(lost)
    return out


def worst_loss_rps(row: InferenceRow, units: list[Lost], k: int) -> float:
    """Capacity the row's ``k`` worst domains take down, in requests/s of its replicas."""
    losses = sorted((sum(row.replicas[i].rps_per_replica * n for i, n in lost.items()) for lost in units), reverse=True)
    return sum(losses[:k])


def worst_kind_loss(units: list[Lost], kind: int, k: int) -> int:
    """Replicas of one kind its ``k`` worst domains take down."""
    return sum(sorted((lost.get(kind, 0) for lost in units), reverse=True)[:k])


def claimed_loss_rps(replicas: Sequence[ReplicaRow]) -> float:
    """The capacity the worst failure domain takes down, as the rows count it (``per_domain``
    replicas of the kind that loses most): what the model holds ``spare_replicas`` times."""
    return max((r.per_domain * r.rps_per_replica for r in replicas), default=0.0)


def domains_survived(row: InferenceRow, svc: InferenceService) -> float:
    """How many failure domains the row's replicas can lose, each taking what the row says
    the worst one holds (``per_domain``), and still carry the demand (a mix: each kind its own
    routed load). What the model holds at or above ``spare_replicas``."""
    if svc.mix is None:
        spare = sum(r.count * r.rps_per_replica for r in row.replicas) - row.required_rps * (1 + svc.min_spare_share)
        loss = claimed_loss_rps(row.replicas)
        return math.floor(spare / loss + 1e-6) if loss > 0 else 0.0
    routed = [0.0] * len(row.replicas)
    for bucket in row.routing:
        for route in bucket.routes:
            if 0 <= route.replica < len(routed):
                routed[route.replica] += route.rps
    survived = []
    for i, rep in enumerate(row.replicas):
        busy = routed[i] / rep.rps_per_replica if rep.rps_per_replica else 0.0
        if rep.per_domain:
            survived.append(math.floor((rep.count - busy) / rep.per_domain + 1e-4))
    return float(min(survived, default=0))
