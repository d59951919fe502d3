"""Two-stage stochastic plans (``planner solve PROBLEM --scenarios S.yaml``): buy once, operate
per scenario, at the least probability-weighted TCO.

One CP-SAT model holds a full build per scenario (``optimize.model.build(into=...)``): its
replicas, routing, renting and job schedule are that scenario's own (stage 2), while every
pool's servers are one decision shared by all of them (stage 1: the same variable value in each
build; racks, network and power follow from the servers in each). The objective is the
probability-weighted sum of the scenarios' TCOs; ``--risk cvar:ALPHA:WEIGHT`` adds WEIGHT times
the conditional value at risk of the TCO at ALPHA (Rockafellar-Uryasev: ``eta + E[(tco -
eta)+] / (1 - ALPHA)``).

What uncertainty is worth, each measured by solving again (never read off the model):

- **VSS**, the value of the stochastic solution: the deterministic plan's hardware (the base
  problem's optimum) operated in every scenario (each solved with exactly those servers), its
  expected TCO, minus the two-stage plan's expected TCO, the two-stage hardware likewise
  re-evaluated per scenario. None when the deterministic hardware cannot serve a scenario.
- **EVPI**, the expected value of perfect information: the two-stage expected TCO minus the mean
  of each scenario's own optimum.

A scenario that no purchase can serve (its own problem is infeasible) is reported, not dropped
silently, and left out of the two-stage model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from ortools.sat.python import cp_model

from planner.context import Context, prepare
from planner.errors import InputError
from planner.io.overrides import variant
from planner.io.problem_io import LoadedProblem
from planner.optimize.built import Built
from planner.optimize.model import build
from planner.optimize.solve import solve
from planner.schema.plan import Plan
from planner.whatif.fixed import ServerCounts, fixed_plan
from planner.whatif.montecarlo import ScenarioFile

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


@dataclass
class Scenario:
    name: str
    probability: float
    overrides: dict[str, Any]


def scenarios_of(spec: ScenarioFile) -> list[Scenario]:
    """The named scenarios (their probabilities, or equal shares), else the Monte Carlo draws
    (equally likely)."""
    if spec.scenarios:
        given = [s.probability for s in spec.scenarios if s.probability is not None]
        if given and len(given) != len(spec.scenarios):
            raise InputError("give every named scenario a probability, or none (equal shares)", key="scenarios")
        if given and abs(sum(given) - 1) > 1e-6:
            raise InputError(f"scenario probabilities sum to {sum(given):g}, not 1", key="scenarios")
        n = len(spec.scenarios)
        return [
            Scenario(s.name, s.probability if given and s.probability is not None else 1 / n, dict(s.set))
            for s in spec.scenarios
        ]
    mc = spec.monte_carlo
    if mc is None:
        raise InputError("the scenario file has neither scenarios nor monte_carlo", key="scenarios")
    import random

    rng = random.Random(mc.seed)
    draws = [{path: round(d.draw(rng), 6) for path, d in mc.draws.items()} for _ in range(mc.samples)]
    return [Scenario(f"draw-{i + 1}", 1 / len(draws), draw) for i, draw in enumerate(draws)]


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
    builts = [build(c.problem, c.catalog, c.workloads, kept=c.kept, into=model, pools=keys) for c in contexts]
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


def servers_of(plan: Plan) -> ServerCounts:
    return {(r.server, r.gpu, r.fabric): r.count for r in plan.servers}


def contexts_for(base: LoadedProblem, scenarios: list[Scenario]) -> list[Context]:
    out = []
    for s in scenarios:
        ctx = prepare(variant(base, s.overrides) if s.overrides else base)
        if ctx.problem.yearly:
            raise InputError(
                "two-stage plans buy once: a problem with purchases by year is not supported",
                key="policy.purchases",
                hint="solve with --scenarios only for single-purchase problems",
            )
        out.append(ctx)
    return out


def plan_under_uncertainty(
    base: LoadedProblem, spec: ScenarioFile, risk: Risk | None = None, time_limit_s: float | None = None
) -> Plan:
    """The two-stage plan: the base problem operated on the hardware bought for all scenarios,
    with ``plan.stochastic`` (expected TCO, VSS, EVPI, per scenario)."""
    from planner.pipeline import plan_context
    from planner.verify import verify

    scenarios = scenarios_of(spec)
    contexts = contexts_for(base, scenarios)
    own = _own_optima(base, scenarios, time_limit_s)
    servable = [i for i, p in enumerate(own) if p.status != "infeasible"]
    if not servable:
        raise InputError("no scenario can be served by any purchase", key="scenarios")
    mass = sum(scenarios[i].probability for i in servable)
    probs = [scenarios[i].probability / mass for i in servable]
    ts, solved = solve_two_stage([contexts[i] for i in servable], probs, risk, time_limit_s)
    if solved.status not in ("optimal", "feasible"):
        raise InputError("no single purchase serves every servable scenario", key="scenarios")
    hardware = {k: int(solved.solver.value(v)) for k, v in ts.shared.items()}
    base_ctx = prepare(base)
    deterministic = servers_of(plan_context(base_ctx, time_limit_s))
    rows, two_stage_tcos, det_tcos = [], [], []
    jobs = [(base, scenarios[i].overrides, hw, time_limit_s) for i in servable for hw in (hardware, deterministic)]
    evaluated = iter(_map(_fixed_tco, jobs))
    for i, s in enumerate(scenarios):
        row: dict[str, Any] = {"name": s.name, "probability": s.probability}
        if i not in servable:
            rows.append({**row, "tco_usd": None, "status": "infeasible", "own_optimum_tco_usd": None})
            continue
        mine, det = next(evaluated), next(evaluated)
        two_stage_tcos.append(mine)
        det_tcos.append(det)
        rows.append(
            {
                **row,
                "tco_usd": mine,
                "status": "optimal" if mine is not None else "infeasible",
                "own_optimum_tco_usd": own[i].tco_usd,
                "deterministic_hardware_tco_usd": det,
            }
        )
    expected = _expect(probs, two_stage_tcos)
    eev = _expect(probs, det_tcos)
    ws = _expect(probs, [own[i].tco_usd for i in servable])
    plan = fixed_plan(base_ctx, hardware, time_limit_s) or fixed_plan(contexts[servable[0]], hardware, time_limit_s)
    assert plan is not None  # the hardware serves at least the first servable scenario
    plan.verification = verify(plan_ctx_problem(base_ctx), base_ctx.catalog, plan)
    plan.stochastic = {
        "scenarios": len(scenarios),
        "servable": len(servable),
        "status": solved.status,
        "gap": solved.gap,
        # a proven floor on the expected TCO: the wait-and-see mean, or the model's bound
        "lower_bound_usd": _round(_floor_usd(ws, solved, probs, risk)),
        "risk": None if risk is None else {"cvar_alpha": risk.alpha, "weight": risk.weight},
        "expected_tco_usd": _round(expected),
        "deterministic_expected_tco_usd": _round(eev),
        "wait_and_see_tco_usd": _round(ws),
        "vss_usd": _round(None if eev is None or expected is None else eev - expected),
        "evpi_usd": _round(None if expected is None or ws is None else expected - ws),
        "servers": [
            {"server": k[0], "gpu": k[1], "fabric": k[2], "count": n} for k, n in sorted(hardware.items()) if n
        ],
        "deterministic_servers": [
            {"server": k[0], "gpu": k[1], "fabric": k[2], "count": n} for k, n in sorted(deterministic.items()) if n
        ],
        "per_scenario": rows,
    }
    return plan


def _own_optima(base: LoadedProblem, scenarios: list[Scenario], time_limit_s: float | None) -> list[Plan]:
    """Each scenario's own optimum (the wait-and-see plans), in worker processes."""
    return _map(_own_plan, [(base, s.overrides, time_limit_s) for s in scenarios])


def _own_plan(job: tuple[LoadedProblem, dict[str, Any], float | None]) -> Plan:
    from planner.pipeline import plan_problem

    base, overrides, time_limit_s = job
    return plan_problem(variant(base, overrides) if overrides else base, time_limit_s)


def _fixed_tco(job: tuple[LoadedProblem, dict[str, Any], ServerCounts, float | None]) -> float | None:
    base, overrides, servers, time_limit_s = job
    plan = fixed_plan(prepare(variant(base, overrides) if overrides else base), servers, time_limit_s)
    return None if plan is None else plan.tco_usd


def _map(fn: Any, jobs: list[Any]) -> list[Any]:
    """Independent solves, one worker process per core (in order; the same answers as in one)."""
    import multiprocessing
    import os

    from planner.executors import map_ordered

    workers = min(os.cpu_count() or 1, len(jobs))
    if workers < 2 or multiprocessing.parent_process() is not None:
        return [fn(j) for j in jobs]
    return list(map_ordered(fn, jobs, workers))


def plan_ctx_problem(ctx: Context) -> Any:
    return ctx.problem


def _floor_usd(ws: float | None, solved: Any, probs: list[float], risk: Risk | None) -> float | None:
    """No purchase does better on average than knowing each scenario in advance (``ws``); the
    model's own bound, in dollars, when it weighs the expectation alone."""
    bounds = [ws] if ws is not None else []
    if risk is None or risk.weight == 0:
        bounds.append(solved.bound / sum(weights(probs)))
    return max(bounds) if bounds else None


def _expect(probs: list[float], values: list[float | None]) -> float | None:
    if any(v is None for v in values):
        return None
    return sum(p * v for p, v in zip(probs, values, strict=True) if v is not None)


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 2)
