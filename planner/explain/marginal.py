"""Explanations users can act on, each measured by solving again.

CP-SAT has no duals, and integer problems have no trustworthy ones: every figure
here is the difference between two solved plans.

- marginal values: each limit loosened by its natural step (one server's money
  or power, one rack, 10% of a deadline or a latency target, 10% less demand);
- budget steps (epsilon-constraint): the next budget levels at which TCO drops,
  and the budget above which more money saves nothing;
- a runner-up: the best plan with a different GPU mix, to show how flat the optimum is;
- why not: for a GPU not bought, the cheapest plan in which it serves a workload,
  or the physical reason it cannot.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from planner.assemble import assemble_plan
from planner.context import Context, prepare
from planner.errors import InputError, PlannerError
from planner.optimize.model import Built, build
from planner.optimize.solve import solve
from planner.schema.plan import BudgetStep, Explanations, Plan, RunnerUp, WhyNotRow

# Plans whose TCO differs by less than this are the same for a reader (unit costs
# enter the solver in whole dollars).
SAVING_USD = 10.0
BUDGET_STEPS = 3


def explain(ctx: Context, plan: Plan, time_limit_s: float | None = None, why_not: list[str] | None = None) -> None:
    """Fill ``plan.constraints[].marginal_usd`` and ``plan.explanations`` (in place)."""
    start = time.perf_counter()
    marginal_values(ctx, plan, time_limit_s)
    ex = Explanations()
    if ctx.problem.finance.budget_usd is not None:
        ex.budget_steps, ex.budget_saturates_at_usd = budget_steps(ctx, plan, time_limit_s)
    ex.runner_up = runner_up(ctx, plan, time_limit_s)
    if why_not:
        ex.why_not = why_not_rows(ctx, plan, why_not, time_limit_s)
    ex.seconds = round(time.perf_counter() - start, 3)
    plan.explanations = ex


def solve_context(ctx: Context, time_limit_s: float | None, extra: Any = None) -> tuple[Plan | None, Built | None]:
    """Solve a context (optionally with extra constraints on the built model); None when infeasible."""
    if not all(w.feasible for w in ctx.workloads):
        return None, None
    built = build(ctx.problem, ctx.catalog, ctx.workloads)
    if extra is not None:
        extra(built)
    solved = solve(built.model, time_limit_s)
    if solved.status not in ("optimal", "feasible"):
        return None, built
    return assemble_plan(ctx, built, solved), built


def variant_context(ctx: Context, path: str, value: Any) -> Context:
    """The context with one problem value moved; options are rebuilt only when they can change."""
    from planner.io.overrides import variant

    assert ctx.loaded is not None
    loaded = variant(ctx.loaded, {path: value})
    # Money, site power and racks, stock, policy and demand leave every option as it was.
    same_options = (
        path.startswith(("finance.", "catalog.stock", "policy.max_gpu_types"))
        or path in ("site.racks", "site.power_kw", "horizon_years")
        or (path.startswith("inference.") and path.endswith(".requests_per_s"))
    )
    if same_options:
        return replace(ctx, problem=loaded.problem, loaded=loaded)
    return prepare(loaded)


def _moved_tco(job: tuple[Context, str, Any, float | None]) -> float | None:
    ctx, path, value, time_limit_s = job
    try:
        moved, _ = solve_context(variant_context(ctx, path, value), time_limit_s)
    except (InputError, PlannerError):  # a variant the schema refuses (a limit at its bound) is not measured
        return None
    return None if moved is None else moved.tco_usd


def marginal_values(ctx: Context, plan: Plan, time_limit_s: float | None = None, workers: int | None = None) -> None:
    """Loosen each limit by its step and solve again; the re-solves run in worker processes."""
    import os

    from planner.whatif.executors import map_ordered

    rows, jobs = [], []
    for row in plan.constraints:
        if row.step is None or row.limit is None or row.step == 0:
            continue
        value: float | int = row.limit + row.step
        if float(row.limit).is_integer() and float(row.step).is_integer():
            value = int(value)
        rows.append(row)
        jobs.append((ctx, row.path, value, time_limit_s))
    moved = map_ordered(_moved_tco, jobs, workers or os.cpu_count() or 1)
    for row, tco in zip(rows, moved, strict=True):
        if tco is None:
            continue
        row.marginal_usd = round(tco - plan.tco_usd, 2)
        row.binding = row.marginal_usd < -SAVING_USD


def budget_steps(ctx: Context, plan: Plan, time_limit_s: float | None = None) -> tuple[list[BudgetStep], float | None]:
    """Epsilon-constraint: the budget levels just above the current one where TCO drops."""
    free_ctx = replace(
        ctx,
        problem=ctx.problem.model_copy(update={"finance": ctx.problem.finance.model_copy(update={"budget_usd": None})}),
    )
    unlimited, _ = solve_context(free_ctx, time_limit_s)
    if unlimited is None:
        return [], None
    saturates = unlimited.capex_usd
    steps: list[BudgetStep] = []
    current = plan.tco_usd
    while len(steps) < BUDGET_STEPS and current > unlimited.tco_usd + SAVING_USD:
        target = int(current - SAVING_USD)

        def cheaper(b: Built, target: int = target) -> None:
            b.model.add(b.tco <= target)
            b.model.clear_objective()
            b.model.minimize(b.capex)

        least, _ = solve_context(free_ctx, time_limit_s, cheaper)
        if least is None:
            break
        at = replace(
            free_ctx,
            problem=free_ctx.problem.model_copy(
                update={"finance": free_ctx.problem.finance.model_copy(update={"budget_usd": least.capex_usd})}
            ),
        )
        best, _ = solve_context(at, time_limit_s)
        if best is None or best.tco_usd >= current - SAVING_USD:
            break
        steps.append(
            BudgetStep(
                budget_usd=least.capex_usd,
                tco_usd=best.tco_usd,
                saves_usd=round(current - best.tco_usd, 2),
                gpus=best.gpus,
            )
        )
        current = best.tco_usd
    return steps, saturates


def _gpu_flags(b: Built) -> dict[str, Any]:
    """One Boolean per GPU type: is any server of it bought?"""
    from planner.optimize.model import upper

    flags: dict[str, Any] = {}
    for key, p in b.pools.items():
        flag = flags.get(key.gpu)
        if flag is None:
            flag = flags[key.gpu] = b.model.new_bool_var(f"mix[{key.gpu}]")
        b.model.add(p.servers <= upper(p.servers) * flag)
    for gpu, flag in flags.items():
        b.model.add(sum(p.servers for k, p in b.pools.items() if k.gpu == gpu) >= flag)
    return flags


def runner_up(ctx: Context, plan: Plan, time_limit_s: float | None = None) -> RunnerUp | None:
    mix = set(plan.gpus)

    def different(b: Built) -> None:
        flags = _gpu_flags(b)
        b.model.add(
            sum(1 - f for g, f in flags.items() if g in mix) + sum(f for g, f in flags.items() if g not in mix) >= 1
        )

    other, _ = solve_context(ctx, time_limit_s, different)
    if other is None:
        return None
    return RunnerUp(tco_usd=other.tco_usd, extra_usd=round(other.tco_usd - plan.tco_usd, 2), gpus=other.gpus)


def why_not_rows(ctx: Context, plan: Plan, gpus: list[str], time_limit_s: float | None = None) -> list[WhyNotRow]:
    """For each named GPU and each workload: the best plan with that GPU serving it, or why it cannot."""
    wanted = sorted(ctx.catalog.gpus) if [g.lower() for g in gpus] == ["all"] else [ctx.catalog.gpu(g).id for g in gpus]
    rows = []
    for gpu in wanted:
        if gpu in plan.gpus and [g.lower() for g in gpus] == ["all"]:
            continue
        for w in ctx.workloads:
            rows.append(_why_not_one(ctx, plan, gpu, w.name, time_limit_s))
    return rows


def _why_not_one(ctx: Context, plan: Plan, gpu: str, workload: str, time_limit_s: float | None) -> WhyNotRow:
    w = next(x for x in ctx.workloads if x.name == workload)
    inference = [o for o in w.inference if o.gpu == gpu]
    training = [o for o in w.training if o.gpu == gpu]
    if not inference and not training:
        reasons = w.reasons_by_gpu().get(gpu) or ["not in any server chassis the problem allows"]
        return WhyNotRow(gpu=gpu, workload=workload, status="impossible", how=reasons[-1])
    forced = replace(w, inference=inference, training=training)
    sub = replace(ctx, workloads=[forced if x.name == workload else x for x in ctx.workloads])
    alt, _ = solve_context(sub, time_limit_s)
    over = ""
    if alt is None:
        # Not within the site's limits: say what it would take, with them lifted.
        alt, _ = solve_context(_without_site_limits(sub), time_limit_s)
        if alt is None:
            return WhyNotRow(
                gpu=gpu,
                workload=workload,
                status="impossible",
                how="it could run it, but not alongside the other workloads' targets",
            )
        over = (
            f"; exceeds the site's limits: needs capex {_usd(alt.capex_usd)}, "
            f"{alt.facility_power_kw:,.1f} kW, {alt.racks} racks"
        )
    extra = round(alt.tco_usd - plan.tco_usd, 2)
    status = "over the site's limits" if over else "dearer" if extra > SAVING_USD else "as cheap"
    return WhyNotRow(
        gpu=gpu,
        workload=workload,
        status=status,
        tco_usd=alt.tco_usd,
        extra_usd=extra,
        how=_usage(alt, gpu, workload) + over,
    )


def _usd(x: float) -> str:
    return f"${x:,.0f}"


def _without_site_limits(ctx: Context) -> Context:
    p = ctx.problem
    problem = p.model_copy(
        update={
            "finance": p.finance.model_copy(update={"budget_usd": None}),
            "site": p.site.model_copy(update={"power_kw": None, "racks": None}),
        }
    )
    return replace(ctx, problem=problem)


def _usage(plan: Plan, gpu: str, workload: str) -> str:
    for t in plan.training:
        if t.name == workload:
            return f"{t.gpus} x {t.gpu} on {t.fabric}, {t.days:.1f} days"
    for s in plan.inference:
        if s.name == workload:
            return ", ".join(f"{r.count} x {r.gpus_per_replica} {r.gpu} {r.precision}" for r in s.replicas)
    return ""
