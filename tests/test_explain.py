"""Explanations hold up when checked by solving again, independently."""

from __future__ import annotations

import pytest

from planner.catalog import load_catalog
from planner.explain import explain
from planner.io.overrides import variant
from planner.io.problem_io import loads_problem
from planner.pipeline import plan_context, plan_problem, prepare

KEEP = ["H100-SXM", "L40S", "L4", "A10", "RTX-6000-Ada", "Jetson-AGX-Orin"]

TEXT = """
name: explain
finance:
  budget_usd: {budget}
site:
  power_kw: 60
  racks: 4
catalog:
  exclude: [{exclude}]
policy:
  allow: [workstation, edge]      # the GPUs kept include a workstation card and an edge module
training:
  - name: tune
    model: llama-3.1-8b
    method: lora
    tokens: 2.0e9
    deadline_days: {deadline}
inference:
  - name: chat
    model: llama-3.1-8b
    precisions: [fp8, int4, bf16]
    requests_per_s: 12
    tpot_ms: 60
    ttft_ms: 1500
    spare_replicas: 1
"""


def _loaded(budget=400000, deadline=10):
    exclude = ", ".join(g for g in load_catalog().gpus if g not in KEEP)
    return loads_problem(TEXT.format(budget=budget, deadline=deadline, exclude=exclude), "explain.yaml")


@pytest.fixture(scope="module")
def explained():
    ctx = prepare(_loaded())
    plan = plan_context(ctx, keep_start=True)  # as the CLI does: the re-solves start from the plan
    assert ctx.start
    explain(ctx, plan, why_not=["Jetson-AGX-Orin", "L4"])
    return ctx, plan


def test_every_marginal_value_is_confirmed_by_an_independent_resolve(explained):
    """The explanations' re-solves started from the plan; each check here is a fresh solve."""
    ctx, plan = explained
    measured = [c for c in plan.constraints if c.marginal_usd is not None]
    assert len(measured) >= 6
    for c in measured:
        moved = c.limit + c.step
        if float(c.limit).is_integer() and float(c.step).is_integer():
            moved = int(moved)
        again = plan_problem(variant(ctx.loaded, {c.path: moved}))
        assert again.tco_usd - plan.tco_usd == pytest.approx(c.marginal_usd, abs=0.05), c.name
        assert c.binding == (c.marginal_usd < -10)


def test_a_limit_just_below_what_the_plan_uses_binds_or_is_named():
    base = plan_problem(_loaded(budget=10_000_000))
    tight_budget = base.capex_usd - 1
    plan = plan_problem(_loaded(budget=tight_budget))
    if plan.status == "infeasible":
        assert "budget" in plan.diagnosis.conflict
    else:
        assert plan.tco_usd >= base.tco_usd - 10
        ctx = prepare(_loaded(budget=tight_budget))
        explained_plan = plan_context(ctx)
        explain(ctx, explained_plan)
        row = next(c for c in explained_plan.constraints if c.name == "budget")
        assert row.binding and row.marginal_usd < 0


def test_runner_up_is_a_different_mix_and_no_cheaper(explained):
    _, plan = explained
    r = plan.explanations.runner_up
    assert r is not None
    assert set(r.gpus) != set(plan.gpus)
    assert r.tco_usd >= plan.tco_usd - 1


def test_why_not_gives_a_physical_reason_or_a_dearer_plan(explained):
    _, plan = explained
    rows = {(w.gpu, w.workload): w for w in plan.explanations.why_not}
    jetson = rows[("Jetson-AGX-Orin", "tune")]
    assert jetson.status == "impossible" and jetson.how
    for w in plan.explanations.why_not:
        if w.tco_usd is not None and w.status != "over the site's limits":
            assert w.tco_usd >= plan.tco_usd - 1  # the plan was optimal


def test_infeasible_fixes_are_exact_and_the_conflict_minimal():
    plan = plan_problem(_loaded(budget=20000, deadline=2))
    assert plan.status == "infeasible"
    d = plan.diagnosis
    assert d.conflict
    for fix in d.fixes:
        value = fix.required
        at = plan_problem(variant(_loaded(budget=20000, deadline=2), {fix.path: value}))
        assert at.status != "infeasible", fix
        nudge = -1 if fix.constraint == "budget" else -0.02 if fix.constraint.endswith("deadline") else None
        if nudge is not None:
            below = plan_problem(variant(_loaded(budget=20000, deadline=2), {fix.path: value + nudge}))
            assert below.status == "infeasible", fix
    # every member of the conflict matters: lifting any one alone restores a plan
    lifts = {"budget": 10**9, "job:tune:deadline": 3000}
    for name in d.conflict:
        if name in lifts:
            path = "finance.budget_usd" if name == "budget" else "training.tune.deadline_days"
            lifted = plan_problem(variant(_loaded(budget=20000, deadline=2), {path: lifts[name]}))
            assert lifted.status != "infeasible", name
