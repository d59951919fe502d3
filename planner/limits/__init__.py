"""THE table of named limit families. The model builder, the plan's limits report, the
verifier, the explanations and the diagnosis all read ``FAMILIES``; adding a family is a
class (``planner/limits/base.py`` says what it declares) and a line here.
See docs/contributing.md."""

from __future__ import annotations

from planner.limits.base import Family, Limit, Measured
from planner.limits.policy import MaxGpuTypes, Stock
from planner.limits.site import AirRackPower, Budget, RackPower, Racks, RackUnits, SitePower
from planner.limits.workloads import Deadline, ServiceRate, ServiceSpares, ServiceTpot, ServiceTtft

FAMILIES: list[Family] = [
    Budget(),
    SitePower(),
    Racks(),
    RackPower(),
    RackUnits(),
    AirRackPower(),
    Deadline(),
    ServiceRate(),
    ServiceTtft(),
    ServiceTpot(),
    ServiceSpares(),
    Stock(),
    MaxGpuTypes(),
]

__all__ = ["FAMILIES", "Family", "Limit", "Measured"]
