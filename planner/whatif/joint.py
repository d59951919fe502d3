"""The two-stage model itself: a full build per scenario in one CP-SAT model, every pool's
servers one value shared by all (stage 1), the probability-weighted TCO (optionally with a CVaR
tail term) as the objective. Exact, but it grows with the scenario count; ``decompose`` finds
plans and bounds from scenario-sized solves and calls this only when it is small."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from ortools.sat.python import cp_model

from planner.bom import buyable
from planner.context import Context
from planner.errors import InputError
from planner.optimize.built import Built
from planner.optimize.model import build
from planner.optimize.solve import solve

WEIGHT_SCALE = 1000  # probabilities enter the objective as whole thousandths (or equal weights of 1)


@dataclass(frozen=True)
class Risk:
    alpha: float
    weight: float


def parse_risk(text: str | None) -> Risk | None:
    """``cvar:ALPHA:WEIGHT`` (ALPHA in [0, 1), WEIGHT >= 0); an ``InputError`` naming ``--risk``."""
    if text is None:
        return None
    parts = text.strip().split(":")
    try:
        if len(parts) != 3 or parts[0].lower() != "cvar":
            raise ValueError
        risk = Risk(float(parts[1]), float(parts[2]))
    except ValueError:
        raise InputError(
            f"not a risk measure: {text!r}", key="--risk", hint="cvar:ALPHA:WEIGHT, e.g. cvar:0.9:0.5"
        ) from None
    if not (0 <= risk.alpha < 1 and 0 <= risk.weight <= 100):
        raise InputError(f"{text!r}: ALPHA must be in [0, 1) and WEIGHT in [0, 100]", key="--risk")
    return risk


def weights(probabilities: list[float]) -> list[int]:
    """Whole-number objective weights in the probabilities' proportions."""
    if max(probabilities) - min(probabilities) < 1e-12:
        return [1] * len(probabilities)
    fracs = [Fraction(p).limit_denominator(WEIGHT_SCALE) for p in probabilities]
    lcm = math.lcm(*(f.denominator for f in fracs))
    return [int(f * lcm) for f in fracs]


@dataclass
class TwoStage:
    builts: list[Built]
    model: cp_model.CpModel
    shared: dict[tuple[str, str, str], cp_model.IntVar] = field(default_factory=dict)


def build_two_stage(contexts: list[Context], probabilities: list[float], risk: Risk | None) -> TwoStage:
    """One model: a build per scenario, the servers of every pool shared, the weighted TCO."""
    model = cp_model.CpModel()
    keys = sorted(
        {o.pool for ctx in contexts for w in ctx.workloads for o in w.inference}
        | {o.pool for ctx in contexts for w in ctx.workloads for o in w.training}
        - {
            o.pool
            for ctx in contexts
            for w in ctx.workloads
            for o in w.inference
            if o.rent_usd_per_gpu_hour is not None
        }
    )
    builts = [  # a pool a scenario's catalog does not sell is absent there, so bought in none
        build(
            c.problem, c.catalog, c.workloads, kept=c.kept, into=model, pools=[k for k in keys if buyable(c.catalog, k)]
        )
        for c in contexts
    ]
    ts = TwoStage(builts, model)
    first = builts[0]
    for key, pv in first.pools.items():
        ts.shared[(key.server, key.gpu, key.fabric)] = pv.servers
        for b in builts[1:]:
            other = b.pools.get(key)
            model.add(pv.servers == (other.servers if other is not None else 0))
    for b in builts[1:]:  # a pool only another scenario may hold: bought in none unless all hold it
        for key, pv in b.pools.items():
            if key not in first.pools:
                model.add(pv.servers == 0)
    w = weights(probabilities)
    expected = sum(wi * b.tco for wi, b in zip(w, builts, strict=True))
    if risk is None or risk.weight == 0:
        model.minimize(expected)
        return ts
    # CVaR at alpha of the TCO, in the same weighted units: eta + sum(w x excess) / (1 - alpha)
    eta = model.new_int_var(0, 10**10, "var_tco")
    excess = [model.new_int_var(0, 10**10, f"excess[{i}]") for i in range(len(builts))]
    for x, b in zip(excess, builts, strict=True):
        model.add(x >= b.tco - eta)
    scale = 100
    tail = round(scale / (1 - risk.alpha))
    cvar_scaled = scale * sum(w) * eta + tail * sum(wi * x for wi, x in zip(w, excess, strict=True))
    weight_num = round(risk.weight * 100)
    model.minimize(100 * scale * expected + weight_num * cvar_scaled)
    return ts


def solve_two_stage(
    contexts: list[Context], probabilities: list[float], risk: Risk | None, time_limit_s: float | None
) -> tuple[TwoStage, Any]:
    ts = build_two_stage(contexts, probabilities, risk)
    return ts, solve(ts.model, time_limit_s)
