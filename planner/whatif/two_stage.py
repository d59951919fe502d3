"""Two-stage stochastic plans (``planner solve PROBLEM --scenarios S.yaml``): buy once, operate
per scenario, at the least probability-weighted TCO.

Stage 1 is the purchase (every pool's servers; racks, network and power follow); stage 2, per
scenario, its replicas, routing, renting and job schedule. The objective is the
probability-weighted TCO; ``--risk cvar:ALPHA:WEIGHT`` adds WEIGHT times the conditional value
at risk of the TCO at ALPHA (Rockafellar-Uryasev: ``eta + E[(tco - eta)+] / (1 - ALPHA)``).

The purchase is found by scenario decomposition (``decompose``: scenario-sized solves in worker
processes, candidate purchases scored exactly, a local search, and a proven floor); when that
floor does not prove it and the problem is small, the joint model (``joint``: a build per
scenario, the servers shared) goes on from it.

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

import os
from dataclasses import dataclass
from typing import Any

from planner.context import Context, prepare
from planner.errors import InputError
from planner.executors import worker_pool
from planner.io.overrides import variant
from planner.io.problem_io import LoadedProblem
from planner.optimize.budget import detach_budget
from planner.optimize.solve import solve
from planner.pipeline import solve_start
from planner.schema.plan import Plan
from planner.whatif.decompose import Decomposed, Work, context_of, decompose, forget, freeze, new_work, remember, thaw
from planner.whatif.fixed import ServerCounts, fixed_plan, servers_of
from planner.whatif.joint import Risk, build_two_stage, parse_risk, weights
from planner.whatif.montecarlo import ScenarioFile

__all__ = ["Risk", "parse_risk", "plan_under_uncertainty", "scenarios_of", "servers_of", "weights"]

GAP_PROVEN = 1e-6  # relative: the purchase is optimal
JOINT_MAX_OPTIONS = 3000  # options x scenarios: the joint model is tried from the decomposition's purchase


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


def plan_under_uncertainty(
    base: LoadedProblem, spec: ScenarioFile, risk: Risk | None = None, time_limit_s: float | None = None
) -> Plan:
    """The two-stage plan: the base problem operated on the hardware bought for all scenarios,
    with ``plan.stochastic`` (expected TCO, VSS, EVPI, the floor, per scenario)."""
    scenarios = scenarios_of(spec)
    _single_purchase(base, scenarios)
    work = new_work(base, [s.overrides for s in scenarios] + [{}], time_limit_s)
    # prepared before the workers start: what the first preparation loads (the catalog, the
    # performance tables) they inherit, and the base problem's context with it
    base_ctx = remember(work, len(scenarios), prepare(base))
    solve_start(base_ctx, time_limit_s)  # the scenarios' solves start there
    try:
        with worker_pool(min(os.cpu_count() or 1, len(scenarios) + 1), detach_budget) as run:
            d = decompose(run, work, [s.probability for s in scenarios], risk)
        joint = _joint(work, d, risk, time_limit_s) if _joint_worth_it(work, d) else None
        if d.hardware is None:
            raise InputError("no purchase was found that serves every servable scenario", key="scenarios")
        return _report(base_ctx, scenarios, d, joint, time_limit_s)
    finally:
        forget(work)


def _single_purchase(base: LoadedProblem, scenarios: list[Scenario]) -> None:
    for s in [None, *scenarios]:
        problem = (variant(base, s.overrides) if s and s.overrides else base).problem
        if problem.yearly:
            raise InputError(
                "two-stage plans buy once: a problem with purchases by year is not supported",
                key="policy.purchases",
                hint="solve with --scenarios only for single-purchase problems",
            )


def _joint_worth_it(work: Work, d: Decomposed) -> bool:
    """The joint model, when the decomposition has not proven its purchase and the model is small:
    its options over all scenarios within ``JOINT_MAX_OPTIONS``."""
    if d.hardware is not None and d.gap <= GAP_PROVEN:
        return False
    options = sum(len(w.inference) + len(w.training) for w in context_of(work, d.servable[0]).workloads)
    return options * len(d.servable) <= JOINT_MAX_OPTIONS


def _joint(work: Work, d: Decomposed, risk: Risk | None, time_limit_s: float | None) -> Any:
    """Solve the joint model from the best purchase found; its purchase is scored like any other
    and taken when better; its bound raises the floor (when it weighs the expectation alone)."""
    contexts = [context_of(work, i) for i in d.servable]
    ts = build_two_stage(contexts, d.probs, risk)
    for key, var in ts.shared.items():
        ts.model.add_hint(var, thaw(d.hardware).get(key, 0) if d.hardware is not None else 0)
    solved = solve(ts.model, time_limit_s)
    if solved.status == "infeasible":
        raise InputError("no single purchase serves every servable scenario", key="scenarios")
    if solved.status in ("optimal", "feasible"):
        d.search.run = lambda fn, jobs: [fn(j) for j in jobs]  # the pool is gone: score here
        found = freeze({k: solved.value(v) for k, v in ts.shared.items()})
        d.search.evaluate([found])
        d.hardware = d.search.best()
        score = d.search.score(found)
        if (risk is None or risk.weight == 0) and score is not None and solved.objective > 0:
            # the model counts whole dollars per item: its bound, in the plans' dollars
            bound_usd = solved.bound * score / solved.objective
            best = d.search.score(d.hardware) if d.hardware is not None else None
            d.floor_usd = max(d.floor_usd, min(bound_usd, best if best is not None else bound_usd))
    return solved


def _report(
    base_ctx: Context, scenarios: list[Scenario], d: Decomposed, joint: Any, time_limit_s: float | None
) -> Plan:
    from planner.verify import verify

    assert d.hardware is not None
    hardware = thaw(d.hardware)
    mine = d.search.tcos[d.hardware]
    det = d.search.tcos.get(d.deterministic) if d.deterministic is not None else None
    det_row: list[float | None] = det if det is not None else [None] * len(d.servable)
    rows = _per_scenario(scenarios, d, mine, det_row)
    expected = _expect(d.probs, mine)
    eev = _expect(d.probs, det_row)
    ws = _expect(d.probs, [d.own[i].tco_usd for i in d.servable])
    plan = fixed_plan(base_ctx, hardware, time_limit_s) or fixed_plan(
        _scenario_context(base_ctx, scenarios[d.servable[0]]), hardware, time_limit_s
    )
    assert plan is not None  # the hardware serves every servable scenario
    plan.verification = verify(base_ctx.problem, base_ctx.catalog, plan)
    gap = d.gap
    plan.stochastic = {
        "scenarios": len(scenarios),
        "servable": len(d.servable),
        "status": "optimal" if gap <= GAP_PROVEN else "feasible",
        "gap": round(gap, 6),
        "method": "decomposition" if joint is None else "decomposition, then the joint model",
        "purchases_scored": len(d.search.tcos),
        # a proven floor on the (risk-adjusted) TCO: each scenario's floor, or the joint model's bound
        "lower_bound_usd": _round(d.floor_usd),
        "risk": None if d.search.risk is None else {"cvar_alpha": d.search.risk.alpha, "weight": d.search.risk.weight},
        "expected_tco_usd": _round(expected),
        "deterministic_expected_tco_usd": _round(eev),
        "wait_and_see_tco_usd": _round(ws),
        "vss_usd": _round(None if eev is None or expected is None else eev - expected),
        "evpi_usd": _round(None if expected is None or ws is None else expected - ws),
        "servers": _rows(hardware),
        "deterministic_servers": _rows(thaw(d.deterministic) if d.deterministic else {}),
        "per_scenario": rows,
    }
    return plan


def _per_scenario(
    scenarios: list[Scenario], d: Decomposed, mine: list[float | None], det_row: list[float | None]
) -> list[dict[str, Any]]:
    """A row per scenario: its TCO on the purchase, its own optimum, on the deterministic purchase."""
    rows: list[dict[str, Any]] = []
    for i, s in enumerate(scenarios):
        row: dict[str, Any] = {"name": s.name, "probability": s.probability}
        if i not in d.servable:
            rows.append({**row, "tco_usd": None, "status": "infeasible", "own_optimum_tco_usd": None})
            continue
        k = d.servable.index(i)
        rows.append(
            {
                **row,
                "tco_usd": mine[k],
                "status": "optimal" if d.own[i].optimal else "feasible",
                "own_optimum_tco_usd": d.own[i].tco_usd,
                "deterministic_hardware_tco_usd": det_row[k],
            }
        )
    return rows


def _scenario_context(base_ctx: Context, scenario: Scenario) -> Context:
    assert base_ctx.loaded is not None
    return prepare(variant(base_ctx.loaded, scenario.overrides))


def _rows(servers: ServerCounts) -> list[dict[str, Any]]:
    return [{"server": k[0], "gpu": k[1], "fabric": k[2], "count": n} for k, n in sorted(servers.items()) if n]


def _expect(probs: list[float], values: list[float | None]) -> float | None:
    if any(v is None for v in values):
        return None
    return sum(p * v for p, v in zip(probs, values, strict=True) if v is not None)


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 2)
