"""The training fabric's shape: leaves, spines and cables for each topology, and what the
topology does to a training job's scaling.

Every topology is two tiers of radix-R switches (leaves and spines). With ``p`` NIC ports:

- ``fat-tree`` (non-blocking): one switch while ``p <= R``; beyond that leaves with R/2 ports
  down and R/2 up, ``ceil(leaves / 2)`` spines. Reaches ``R * R/2`` ports.
- ``oversubscribed-2to1``: leaves with ``2k`` ports down and ``k`` up (``k = R // 3``: 42 + 21
  of 64), ``ceil(k * leaves / R)`` spines; always two tiers (below one switch's ports it is the
  fat tree's single switch, listed once). Reaches ``R * 2k`` ports: fewer spines and optics,
  half the bandwidth between leaves.
- ``rail-optimised``: NIC ``i`` of every server goes to a leaf of rail ``i``, so each rail has
  its own leaves (R/2 down, R/2 up): at least one leaf per rail even for two servers;
  ``ceil(leaves / 2)`` spines, full bisection. Reaches R leaves. A rack-scale system of trays
  has as many rails as one tray has NICs (GB200 NVL72: 4 rails of 18 ports).

A leaf's uplinks are cabled whole: cables are one per NIC port plus ``up x leaves``. The
CP-SAT model (``optimize.model._network``) states the same rules as constraints; the readback,
the verifier and the brute-force tests use ``network_for``.

A job keeps the fabric's ``training_scaling`` while its NIC ports fit one 2:1 leaf (2:1) or
one switch (rail-optimised: a fat tree holds that much under one switch too); beyond, it is
multiplied by the topology's factor (``fabrics.yaml``, ``topologies``), at most 1 in all.
Jobs that one switch holds are offered the fat tree only (``offered``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from planner.schema.catalog import ServerChassis
from planner.schema.fabric import DEFAULT_TOPOLOGY, Fabric, FabricsFile


@dataclass(frozen=True)
class Network:
    ports: int
    leaves: int
    spines: int
    cables: int

    @property
    def switches(self) -> int:
        return self.leaves + self.spines

    @property
    def uplinks(self) -> int:
        return self.cables - self.ports


def leaf_ports(fabric: Fabric) -> tuple[int, int]:
    """Ports down (to NICs) and up (to spines) of one leaf in a two-tier network."""
    r = fabric.switch_radix
    if fabric.topology == "oversubscribed-2to1":
        k = r // 3
        return 2 * k, k
    return r // 2, r // 2


def single_switch_allowed(fabric: Fabric) -> bool:
    """Only the fat tree is one switch while the ports fit (the others are always two tiers)."""
    return fabric.topology == DEFAULT_TOPOLOGY


def rails_of(chassis: ServerChassis) -> tuple[int, int]:
    """(rails, ports per rail) of one server: a rack-scale system's trays share rails."""
    nics, trays = chassis.scaleout_nics, chassis.trays
    if trays > 1 and nics % trays == 0:
        return nics // trays, trays
    return nics, 1


def fits(fabric: Fabric, chassis: ServerChassis) -> bool:
    """Whether a chassis can join this fabric: rail-optimised needs two rails or more."""
    if fabric.kind == "none":
        return True
    if chassis.scaleout_nics == 0:
        return False
    return fabric.topology != "rail-optimised" or rails_of(chassis)[0] >= 2


def rail_ports(members: Iterable[tuple[ServerChassis, int]]) -> list[int]:
    """NIC ports per rail of ``(chassis, servers)`` on one fabric: rail ``j`` holds every
    server's ``j``-th NIC (a server with fewer rails has none there)."""
    loads: list[int] = []
    for chassis, count in members:
        rails, per_rail = rails_of(chassis)
        loads += [0] * (rails - len(loads))
        for j in range(rails):
            loads[j] += per_rail * count
    return loads


def max_ports(fabric: Fabric) -> int:
    """The most NIC ports two tiers reach: a spine has one port per leaf, so R leaves."""
    return fabric.switch_radix * leaf_ports(fabric)[0]


def max_servers(fabric: Fabric, chassis: ServerChassis) -> int:
    """The most servers of one chassis a fabric of this topology holds (alone on it)."""
    if fabric.kind == "none" or chassis.scaleout_nics == 0:
        return 0
    if fabric.topology == "rail-optimised":
        rails, per_rail = rails_of(chassis)
        return (fabric.switch_radix // rails) * leaf_ports(fabric)[0] // per_rail
    return max_ports(fabric) // chassis.scaleout_nics


def network_for(fabric: Fabric, ports: int, rails: Sequence[int] = ()) -> Network:
    """The cheapest network of this topology for ``ports`` NIC ports (``rails``: the ports per
    rail, needed by the rail-optimised topology; ``rail_ports`` counts them)."""
    r = fabric.switch_radix
    if ports == 0 or fabric.kind == "none":
        return Network(ports, 0, 0, 0)
    if single_switch_allowed(fabric) and ports <= r:
        return Network(ports, 1, 0, ports)
    down, up = leaf_ports(fabric)
    if fabric.topology == "rail-optimised":
        if sum(rails) != ports:
            raise ValueError(f"{fabric.id}: rails {list(rails)} do not add up to {ports} ports")
        leaves = sum(math.ceil(n / down) for n in rails)
    else:
        leaves = math.ceil(ports / down)
    spines = math.ceil(up * leaves / r)
    return Network(ports, leaves, spines, ports + up * leaves)


def one_hop_ports(fabric: Fabric) -> int:
    """The most NIC ports a job may have and still see the fat tree's bandwidth at one hop: a
    2:1 leaf's down ports (beyond, it crosses oversubscribed uplinks); for rail-optimised, one
    switch's ports (beyond, a fat tree must cross its spines, a rail stays one hop)."""
    if fabric.topology == "oversubscribed-2to1":
        return leaf_ports(fabric)[0]
    return fabric.switch_radix


def scaling_factor(fabric: Fabric, job_ports: int) -> float:
    """The topology's multiplier on a job's fabric scaling: 1 while the job's NIC ports stay
    within ``one_hop_ports`` (a topology-aware scheduler keeps it there), else the factor."""
    if fabric.kind == "none" or job_ports <= one_hop_ports(fabric):
        return 1.0
    return fabric.topology_scaling


def offered(fabric: Fabric, job_ports: int) -> bool:
    """Whether a job of ``job_ports`` NIC ports is offered this wiring: the fat tree always;
    the others only beyond one switch's ports. A job one switch holds runs no faster on them,
    and on its own the fat tree's single switch is its cheapest network (it could still share
    a large 2:1 fabric with other jobs; the model does not offer that). Nor are they offered
    to a job the fat tree trains in time within one switch (``options.training``)."""
    return fabric.topology == DEFAULT_TOPOLOGY or job_ports > fabric.switch_radix


def expand(file: FabricsFile) -> list[Fabric]:
    """One fabric per scale-out entry and topology (``none`` once): ``ib-ndr`` (fat tree),
    ``ib-ndr-2to1``, ``ib-ndr-rail``, ..."""
    out: list[Fabric] = []
    for f in file.fabrics:
        if f.kind == "none":
            out.append(f)
            continue
        for t in file.topologies:
            if t.id == DEFAULT_TOPOLOGY:  # the entry as written: its id and name unchanged
                out.append(f.model_copy(update={"base_id": f.id, "topology_name": t.name, "topology_source": t.source}))
                continue
            out.append(
                Fabric.model_validate(
                    {
                        **f.model_dump(),
                        "id": f.id + t.id_suffix,
                        "name": f"{f.name}, {t.name}",
                        "topology": t.id,
                        "topology_name": t.name,
                        "topology_source": t.source,
                        "topology_scaling": t.training_scaling_factor,
                        "base_id": f.id,
                    }
                )
            )
    return out
