"""One problem in, one plan out: load -> options -> CP-SAT -> plan -> verify."""

from __future__ import annotations

from planner.assemble import assemble_plan, finance_assumptions
from planner.catalog import Catalog
from planner.context import Context, prepare
from planner.errors import PlannerError
from planner.io.problem_io import LoadedProblem
from planner.optimize.model import build
from planner.optimize.solve import solve
from planner.schema.plan import Diagnosis, Plan
from planner.schema.problem import Problem


def plan_problem(loaded: LoadedProblem, time_limit_s: float | None = None, base: Catalog | None = None) -> Plan:
    ctx = prepare(loaded, base)
    return plan_context(ctx, time_limit_s)


def plan_context(ctx: Context, time_limit_s: float | None = None) -> Plan:
    from planner.explain.diagnose import diagnose, no_option_diagnosis
    from planner.verify import verify

    p = ctx.problem
    empty = [w for w in ctx.workloads if not w.feasible]
    if empty:
        found = no_option_diagnosis(ctx, empty)
        if all(w.kind == "training" for w in empty):
            # jobs that miss their deadline on every GPU: say how far the deadlines must move
            moved = diagnose(ctx, time_limit_s)
            found = found.model_copy(
                update={
                    "summary": found.summary + moved.summary[1:],
                    "fixes": moved.fixes,
                    "combined_fix": moved.combined_fix,
                    "conflict": moved.conflict or found.conflict,
                }
            )
        return _infeasible(p, found)
    built = build(p, ctx.catalog, ctx.workloads, kept=ctx.kept)
    routing_only = any(s.mix for s in p.inference) and not p.training and built.periods == 1
    solved = solve(built.model, time_limit_s, lb_tree_search=routing_only)
    if solved.status in ("optimal", "feasible"):
        from planner.optimize.tiebreak import break_ties

        solved = break_ties(built, solved)  # equal TCO: fewer GPU types, less power, earlier starts
    if solved.status == "infeasible":
        return _infeasible(p, diagnose(ctx, time_limit_s))
    if solved.status not in ("optimal", "feasible"):
        raise PlannerError(
            "the solver found no plan within its time limit and could not prove that none exists; raise --time-limit"
        )
    plan = assemble_plan(ctx, built, solved)
    plan.verification = verify(p, ctx.catalog, plan)
    return plan


def _infeasible(problem: Problem, diagnosis: Diagnosis) -> Plan:
    return Plan(
        problem=problem.name,
        status="infeasible",
        gap=None,
        diagnosis=diagnosis,
        assumptions=finance_assumptions(problem),
    )
