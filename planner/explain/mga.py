"""Near-optimal alternatives (modelling to generate alternatives, as PyPSA's MGA): plans whose
TCO is within a tolerance of the optimum but whose GPU mix differs, for a finance team to put
beside the recommended plan.

Each alternative is the cheapest plan that (a) costs at most ``(1 + within)`` times the optimum
and (b) differs from the optimum and from every alternative found before it in which GPU types
it buys (a no-good cut over one Boolean per GPU type: at least one type added or dropped). So
the list runs from the cheapest different mix upwards, and no two share a mix. Every plan is
assembled and verified like a solved plan.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from planner.catalog import Catalog
from planner.context import Context
from planner.explain.alternatives import _gpu_flags
from planner.explain.resolve import solve_context
from planner.optimize.built import Built
from planner.schema.plan import Plan
from planner.verify import verify

ROUNDING_USD = 1.0  # the model prices in whole dollars; the plan's TCO may round the other way


@dataclass
class Alternative:
    plan: Plan
    delta_share: float  # of the optimum's TCO
    differs: str
    binding: list[str]
    verification: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {
            "tco_usd": self.plan.tco_usd,
            "delta_share": round(self.delta_share, 6),
            "gpus": dict(sorted(self.plan.gpus.items())),
            "differs": self.differs,
            "binding": self.binding,
            "status": self.plan.status,
            "verification": self.verification,
        }


def alternatives(
    ctx: Context, optimum: Plan, within: float, n: int, time_limit_s: float | None = None
) -> list[Alternative]:
    """Up to ``n`` plans within ``within`` (a share) of ``optimum``'s TCO, each with a GPU mix
    of its own; fewer when no more exist within the tolerance."""
    limit_usd = optimum.tco_usd * (1 + within)
    mixes = [_mix(optimum)]
    found: list[Alternative] = []
    for _ in range(n):
        plan, _ = solve_context(ctx, time_limit_s, _differing(list(mixes), math.floor(limit_usd)))
        if plan is None or plan.tco_usd > limit_usd + ROUNDING_USD:
            break
        mixes.append(_mix(plan))
        found.append(
            Alternative(
                plan=plan,
                delta_share=(plan.tco_usd - optimum.tco_usd) / optimum.tco_usd if optimum.tco_usd else 0.0,
                differs=differs(optimum, plan, ctx.catalog),
                binding=[c.name for c in plan.constraints if c.tight],
                verification=verify(ctx.problem, ctx.catalog, plan),
            )
        )
    return found


def _differing(mixes: list[set[str]], limit_usd: int) -> Callable[[Built], None]:
    """Extra constraints: a GPU mix unlike each of ``mixes``, at a TCO within the limit."""

    def add(b: Built) -> None:
        flags = _gpu_flags(b)
        for mix in mixes:
            changed = [1 - f for g, f in flags.items() if g in mix] + [f for g, f in flags.items() if g not in mix]
            b.model.add(sum(changed) >= 1)
        b.model.add(b.tco <= limit_usd)

    return add


def _mix(plan: Plan) -> set[str]:
    """The GPU types the plan buys (owned servers)."""
    return {r.gpu for r in plan.servers if r.count}


def differs(base: Plan, other: Plan, catalog: Catalog) -> str:
    """What sets ``other`` apart from ``base``, in words: GPU types, vendors, fabrics, renting,
    serving modes."""
    parts = []
    added = sorted(_mix(other) - _mix(base))
    dropped = sorted(_mix(base) - _mix(other))
    if added:
        parts.append("adds " + ", ".join(f"{other.gpus.get(g, 0)} x {g}" for g in added))
    if dropped:
        parts.append("drops " + ", ".join(dropped))
    vendors = (_vendors(base, catalog), _vendors(other, catalog))
    if vendors[0] != vendors[1]:
        parts.append(
            f"vendors {', '.join(sorted(vendors[1])) or 'none'} (was {', '.join(sorted(vendors[0])) or 'none'})"
        )
    fabrics = ({r.fabric for r in base.servers if r.count}, {r.fabric for r in other.servers if r.count})
    if fabrics[0] != fabrics[1]:
        parts.append(f"fabrics {', '.join(sorted(fabrics[1]))} (was {', '.join(sorted(fabrics[0]))})")
    rented = (_rented(base), _rented(other))
    if rented[0] != rented[1]:
        parts.append(f"rents {rented[1]} workload(s) (was {rented[0]})")
    modes = ({(s.name, s.serving_mode) for s in base.inference}, {(s.name, s.serving_mode) for s in other.inference})
    for name, mode in sorted(modes[1] - modes[0]):
        parts.append(f"{name} {mode}")
    return "; ".join(parts) or "same GPU types in other counts"


def _vendors(plan: Plan, catalog: Catalog) -> set[str]:
    return {catalog.gpus[g].vendor for g in _mix(plan) if g in catalog.gpus}


def _rented(plan: Plan) -> int:
    jobs = sum(1 for t in plan.training if t.rented)
    services = sum(1 for s in plan.inference if any(r.rented for r in s.replicas))
    return jobs + services
