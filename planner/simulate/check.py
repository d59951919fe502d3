"""Every `planner solve` checks its plan by simulation (``--no-simulate`` skips it).

Where a service's simulated p99 breaks a target the plan is flagged (an advice row and its
simulation row say by how much); ``--size-by-simulation`` adds capacity until it holds: the
service is planned again on a target tightened by target / simulated p99, re-solved and
simulated, at most ``MAX_ROUNDS`` times. (More spare replicas would not do: a plan's spares
may already be covered by its slack, and they leave each replica's sizing as it was.)
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from planner.io.problem_io import LoadedProblem
from planner.schema.plan import AdviceRow, SimulationRow
from planner.simulate.run import ServiceResult, simulate_plan

if TYPE_CHECKING:
    from planner.context import Context
    from planner.schema.plan import Plan
    from planner.simulate.speculate import Speculation

SOLVE_REQUESTS = 30_000
MAX_ROUNDS = 6


def simulation_rows(results: list[ServiceResult]) -> list[SimulationRow]:
    rows = []
    for r in results:
        if r.holds is None:
            continue
        keys = SimulationRow.model_fields
        rows.append(SimulationRow(**{k: v for k, v in r.row.items() if k in keys}))
    return rows


def _advice(results: list[ServiceResult], planned: dict[str, dict[str, float]], added_usd: float) -> list[AdviceRow]:
    out = []
    for r in results:
        row = r.row
        if r.holds is False:
            misses = [
                f"{name.upper()} p99 {row[f'{name}_p99_ms']:,.0f} ms > target {row[f'{name}_target_ms']:g} ms"
                for name in ("ttft", "tpot")
                if row[f"{name}_p99_ms"] is not None and row[f"{name}_p99_ms"] > row[f"{name}_target_ms"]
            ]
            out.append(
                AdviceRow(
                    kind="simulation",
                    message=f"{r.name}: in simulation ({row['requests']:,} requests) {'; '.join(misses)}; "
                    f"{row['slo_attainment']:.1%} of requests within target. "
                    "Solve with --size-by-simulation to add capacity until it holds.",
                )
            )
    for name, targets in planned.items():
        said = ", ".join(f"{m.removesuffix('_ms').upper()} p99 {v:,.1f} ms" for m, v in sorted(targets.items()))
        out.append(
            AdviceRow(
                kind="simulation",
                message=f"{name}: sized by simulation, planned on {said} so that the simulated p99s meet "
                "the problem's targets; the TCO this adds to the analytic plan",
                usd=round(added_usd, 2),
            )
        )
    return out


def check_by_simulation(
    ctx: Context, plan: Plan, size: bool, seed: int = 0, workers: int = 1, early: Speculation | None = None
) -> tuple[Plan, Context]:
    """The plan with its simulation rows and advice; with ``size``, re-solved with more replicas
    for every service that misses in simulation, until all hold (or ``MAX_ROUNDS``). ``early``:
    the simulation started on the search's first plan, whose results are kept where they hold."""
    from planner.context import prepare
    from planner.pipeline import plan_context

    if plan.status == "infeasible" or not any(s.model is not None for s in ctx.problem.inference):
        return plan, ctx
    base = ctx.loaded or LoadedProblem(ctx.problem, file=ctx.problem.name, lines={})
    planned: dict[str, dict[str, float]] = {}  # service -> metric -> the p99 target planned on
    first_tco = plan.tco_usd
    known = early.results(plan, SOLVE_REQUESTS, seed) if early is not None else {}
    results = simulate_plan(plan, base, ctx.catalog, SOLVE_REQUESTS, seed, workers, known=known)
    rounds = 0
    while size and rounds < MAX_ROUNDS and any(r.holds is False for r in results):
        rounds += 1
        tighter = _tighter_targets(results, ctx)
        for name, targets in tighter.items():
            planned.setdefault(name, {}).update(targets)
        problem = ctx.problem.model_copy(
            update={
                "inference": [
                    s.model_copy(update=tighter[s.name]) if s.name in tighter else s for s in ctx.problem.inference
                ]
            }
        )
        loaded = dataclasses.replace(base, problem=problem)
        again = prepare(loaded)
        again.kept = ctx.kept
        new_plan = plan_context(again)
        if new_plan.status == "infeasible":
            plan.advice.append(
                AdviceRow(
                    kind="simulation",
                    message="--size-by-simulation: planning "
                    + ", ".join(sorted(tighter))
                    + " on tighter targets breaks another limit; the plan below is the last feasible one",
                )
            )
            break
        plan, ctx, base = new_plan, again, loaded
        results = simulate_plan(plan, base, ctx.catalog, SOLVE_REQUESTS, seed, workers)
    plan.simulation = simulation_rows(results)
    plan.advice.extend(_advice(results, planned, plan.tco_usd - first_tco))
    return plan, ctx


def _tighter_targets(results: list[ServiceResult], ctx: Context) -> dict[str, dict[str, float]]:
    """Per failing service, the targets to plan on: each broken one scaled by target / simulated
    p99 (at least 3% tighter), so the next plan buys the capacity the simulation asks for."""
    services = {s.name: s for s in ctx.problem.inference}
    out: dict[str, dict[str, float]] = {}
    for r in results:
        if r.holds is not False:
            continue
        svc = services[r.name]
        for metric in ("ttft", "tpot"):
            sim, target = r.row[f"{metric}_p99_ms"], r.row[f"{metric}_target_ms"]
            if sim is not None and sim > target:
                now = getattr(svc, f"{metric}_ms")
                out.setdefault(r.name, {})[f"{metric}_ms"] = now * min(0.97, target / sim)
    return out
