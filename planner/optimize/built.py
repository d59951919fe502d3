"""What the model builders make: the CP-SAT model, its variables per pool, fabric, job and
service, and the quantities named limits bound (capex, power by year, racks, capacity)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeAlias

from ortools.sat.python import cp_model

from planner.bom import PoolKey, PoolSpec
from planner.options.types import InferenceOption, TrainingOption
from planner.schema.fabric import Fabric

# A linear expression as the builders make it: a sum that starts at 0 (or sums nothing) is
# still the int 0. Not cp_model.LinearExprT: it admits numpy integers, which do not add to a LinearExpr.
Expr: TypeAlias = cp_model.LinearExpr | int


@dataclass
class PoolVars:
    spec: PoolSpec
    servers: cp_model.IntVar  # the most installed in any year (what racks and the network must hold)
    racks: cp_model.IntVar
    fit_per_rack: int  # 0: stands outside racks (a workstation, an edge box)
    bought: list[cp_model.IntVar] = field(default_factory=list)  # per purchase year
    installed: list[Expr] = field(default_factory=list)  # per operating year (index 0 = year 1)


@dataclass
class FabricVars:
    fabric: Fabric
    ports: Expr
    leaves: cp_model.IntVar
    spines: cp_model.IntVar
    uplinks: cp_model.IntVar
    racks: cp_model.IntVar
    fit_per_rack: int


@dataclass
class Floor:
    """A service alone (``optimize.floors.start_service_floors``): its replica kinds, each replica's
    share of servers and racks (or rent) in whole dollars, rates in model units, replicas per
    failure domain, demand and spares; and the floor found: (least cost, replicas per kind)."""

    reps: list[tuple[InferenceOption, cp_model.IntVar]]
    costs: list[int]
    pers: list[int]
    per_domain: list[int]
    need: int
    spare: int
    found: tuple[int, tuple[int, ...]] | None = None

    def only(self, kinds: list[int]) -> Floor:
        """The same service on the replica kinds ``kinds`` (indices) alone, no floor found yet."""
        return Floor(
            [self.reps[i] for i in kinds],
            [self.costs[i] for i in kinds],
            [self.pers[i] for i in kinds],
            [self.per_domain[i] for i in kinds],
            self.need,
            self.spare,
        )


Counts = tuple[int, ...]  # a service's replicas per kind (its ``Floor.reps`` order)


@dataclass(frozen=True)
class TypeSet:
    """The GPU types of the services' and types' joint floor (``optimize.type_set_floor``), the
    floor, and each service's best mix on those types."""

    floor_usd: int
    types: frozenset[str]
    mixes: dict[str, Counts]


@dataclass
class Built:
    model: cp_model.CpModel
    pools: dict[PoolKey, PoolVars] = field(default_factory=dict)
    fabrics: dict[str, FabricVars] = field(default_factory=dict)
    train: dict[str, list[tuple[TrainingOption, cp_model.IntVar]]] = field(default_factory=dict)
    periods: int = 1  # operating years planned separately (1: one purchase up front serves every year)
    serve: dict[str, list[tuple[InferenceOption, list[cp_model.IntVar]]]] = field(default_factory=dict)  # per period
    # need, spare, per replica, replicas per failure domain
    serve_rates: dict[str, tuple[int, int, list[int], list[int]]] = field(default_factory=dict)
    # per mix service: (option index, bucket index, period) -> slices of the bucket routed to that kind
    routes: dict[str, dict[tuple[int, int, int], cp_model.IntVar]] = field(default_factory=dict)
    kept: dict[PoolKey, tuple[int, int]] = field(default_factory=dict)  # already owned: (servers, racks), sunk
    starts: dict[str, cp_model.IntVar] = field(default_factory=dict)
    # services with a start, an end or jobs to wait for: when they hold their GPUs
    service_starts: dict[str, cp_model.IntVar | int] = field(default_factory=dict)
    service_windows: dict[str, cp_model.IntervalVar] = field(default_factory=dict)
    durations: dict[str, Expr] = field(default_factory=dict)
    # per pool that jobs (or windowed services) share over time: the GPUs services leave free
    free_gpus: dict[PoolKey, cp_model.IntVar] = field(default_factory=dict)
    slacks: dict[str, cp_model.IntVar] = field(default_factory=dict)
    # per service: (capacity, demand) per period, in milli-requests/s (the rate limit holds them)
    capacity: dict[str, list[tuple[Expr, int]]] = field(default_factory=dict)
    # front-end (and management) Ethernet switches, and the racked servers they connect
    frontend: tuple[Expr, Expr, Expr] = (0, 0, 0)  # (switches, management switches, racked servers)
    storage_tb: int = 0
    storage_ports: int = 0
    storage_on: Expr = 0  # 1 when some racked server is bought (storage serves a cluster)
    floors: dict[str, Floor] = field(default_factory=dict)  # per service with a cost floor
    gpu_share_usd: dict[PoolKey, int] = field(default_factory=dict)  # a GPU's share of its server and rack
    gpu_type_used: dict[str, cp_model.IntVar] = field(default_factory=dict)  # owned: some server of it
    gpu_type_charge_usd: int = 0  # what each owned type costs over the horizon (its flag's TCO term)
    switch_usd: dict[str, int] = field(default_factory=dict)  # per fabric: a leaf or spine's TCO term
    gpu_vendor: dict[str, str] = field(default_factory=dict)  # each owned GPU type's vendor
    type_set: TypeSet | None = None  # the types of the services' joint floor, when solved
    simplicity_tolerance: float = 0.0  # share of the least TCO the tie-breaks may pay for fewer types
    capex: Expr = 0
    it_power_w: Expr = 0  # the peak: every pool at its most servers
    it_power_w_by_year: list[Expr] = field(default_factory=list)
    total_racks: Expr = 0
    paid_racks: Expr = 0  # racks beyond the site's existing ones (what racks cost)
    facility_w_by_year: list[Expr] = field(default_factory=list)  # IT power x its PUE, in watts x PUE_SCALE
    tco: Expr = 0
    # the fleet cuts (``optimize.fleet_cuts``) came after the build, to a model of fewer services
    # than a fleet whose first solve phase did not prove it
    fleet_forced: bool = False
    # adds those cuts to this model; None once added, or when they do not apply (a fleet has them)
    later_cuts: Callable[[], None] | None = None


def upper(var: cp_model.IntVar) -> int:
    """A variable's upper bound. (In ortools 9.15 ``proto.domain[-1]`` silently returns the
    first element: negative indexing of the proto wrapper is broken, so index from the front.)"""
    domain = var.proto.domain
    return int(domain[len(domain) - 1])
