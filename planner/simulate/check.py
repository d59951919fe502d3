"""Every `planner solve` checks its plan by simulation (``--no-simulate`` skips it).

Where a service's simulated p99 breaks a target the plan is flagged (an advice row and its
simulation row say by how much); ``--size-by-simulation`` adds capacity until it holds: one
more replica (a spare, N+k) of the service at a time, re-solved, at most ``MAX_ROUNDS`` times.
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


def _advice(results: list[ServiceResult], sized: dict[str, int]) -> list[AdviceRow]:
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
                    "Solve with --size-by-simulation to add replicas until it holds.",
                )
            )
    for name, extra in sized.items():
        if extra < 1:
            continue
        out.append(
            AdviceRow(
                kind="simulation",
                message=f"{name}: {extra} more replica{'s' if extra > 1 else ''} than the analytic model asks for, "
                "added by --size-by-simulation so that the simulated p99s hold",
            )
        )
    return out


def check_by_simulation(ctx: Context, plan: Plan, size: bool, seed: int = 0, workers: int = 1) -> tuple[Plan, Context]:
    """The plan with its simulation rows and advice; with ``size``, re-solved with more replicas
    for every service that misses in simulation, until all hold (or ``MAX_ROUNDS``)."""
    from planner.context import prepare
    from planner.pipeline import plan_context

    if plan.status == "infeasible" or not any(s.model is not None for s in ctx.problem.inference):
        return plan, ctx
    base = ctx.loaded or LoadedProblem(ctx.problem, file=ctx.problem.name, lines={})
    sized: dict[str, int] = {}
    results = simulate_plan(plan, base, ctx.catalog, SOLVE_REQUESTS, seed, workers)
    rounds = 0
    while size and rounds < MAX_ROUNDS and any(r.holds is False for r in results):
        rounds += 1
        failing = {r.name for r in results if r.holds is False}
        problem = ctx.problem.model_copy(
            update={
                "inference": [
                    s.model_copy(update={"spare_replicas": s.spare_replicas + 1}) if s.name in failing else s
                    for s in ctx.problem.inference
                ]
            }
        )
        for name in failing:
            sized[name] = sized.get(name, 0) + 1
        loaded = dataclasses.replace(base, problem=problem)
        again = prepare(loaded)
        again.kept = ctx.kept
        new_plan = plan_context(again)
        if new_plan.status == "infeasible":
            for name in failing:
                sized[name] -= 1
            plan.advice.append(
                AdviceRow(
                    kind="simulation",
                    message="--size-by-simulation: adding replicas for "
                    + ", ".join(sorted(failing))
                    + " breaks another limit; the plan below is the last feasible one",
                )
            )
            break
        plan, ctx, base = new_plan, again, loaded
        results = simulate_plan(plan, base, ctx.catalog, SOLVE_REQUESTS, seed, workers)
    plan.simulation = simulation_rows(results)
    plan.advice.extend(_advice(results, sized))
    return plan, ctx
