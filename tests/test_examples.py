"""The example problems users copy from: each solves to proven optimality, passes the
verifier and keeps the money identities; the infeasible one explains itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.io.problem_io import load_problem, loads_problem
from planner.pipeline import plan_problem
from tests.conftest import example_plan

PROBLEMS = Path(__file__).resolve().parent.parent / "problems"
INFEASIBLE = {"infeasible-budget.yaml"}
FEASIBLE = sorted(p for p in PROBLEMS.glob("*.yaml") if p.name not in INFEASIBLE)


def test_examples_are_found() -> None:
    names = {p.name for p in FEASIBLE}
    assert {
        "startup.yaml",
        "pretrain-cluster.yaml",
        "serve-70b.yaml",
        "qlora-workstation.yaml",
        "inference-tight-power.yaml",
        "lab-train-and-serve.yaml",
    } <= names
    assert all((PROBLEMS / n).exists() for n in INFEASIBLE)


@pytest.mark.parametrize("path", FEASIBLE, ids=lambda p: p.stem)
def test_example_solves_to_proven_optimality(path: Path) -> None:
    loaded = load_problem(path)
    plan = example_plan(path.name)

    assert plan.problem == loaded.problem.name
    assert plan.status == "optimal", plan.diagnosis
    assert plan.gap is not None and plan.gap < 1e-9
    assert plan.verification == []

    assert plan.purchase, "a plan buys something"
    capex = sum(row.extended_price_usd for row in plan.purchase)
    assert capex == pytest.approx(plan.capex_usd, abs=0.01)
    for row in plan.purchase:
        assert row.extended_price_usd == pytest.approx(row.quantity * row.unit_price_usd, abs=0.01)

    assert [c.year for c in plan.cash_flows] == list(range(loaded.problem.horizon_years + 1))
    present_value = sum(c.present_value_usd for c in plan.cash_flows)
    assert present_value == pytest.approx(plan.tco_usd, abs=0.01)
    assert plan.tco_usd > plan.capex_usd > 0

    # Every workload is placed.
    assert {t.name for t in plan.training} == {j.name for j in loaded.problem.training}
    assert {s.name for s in plan.inference} == {s.name for s in loaded.problem.inference}


@pytest.fixture(scope="module")
def infeasible():  # type: ignore[no-untyped-def]
    """The infeasible example, diagnosed once (a diagnosis re-solves per limit: seconds)."""
    loaded = load_problem(PROBLEMS / "infeasible-budget.yaml")
    return loaded, plan_problem(loaded)


def _budget_fix(plan):  # type: ignore[no-untyped-def]
    assert plan.diagnosis is not None
    fixes = [f for f in plan.diagnosis.fixes if f.constraint == "budget"]
    assert fixes, plan.diagnosis
    return fixes[0]


def test_infeasible_budget_is_diagnosed(infeasible) -> None:  # type: ignore[no-untyped-def]
    loaded, plan = infeasible

    assert plan.status == "infeasible"
    assert plan.purchase == []
    assert plan.diagnosis is not None
    assert "budget" in plan.diagnosis.conflict
    fix = _budget_fix(plan)
    assert fix.path == "finance.budget_usd"
    assert fix.current == pytest.approx(loaded.problem.finance.budget_usd)
    assert fix.required is not None and fix.current is not None
    assert fix.required > fix.current


def test_infeasible_budget_fix_is_enough(infeasible) -> None:  # type: ignore[no-untyped-def]
    """Moving the budget to the diagnosed value gives a plan (the fix is exact, not a guess)."""
    _, plan = infeasible
    fix = _budget_fix(plan)
    text = (PROBLEMS / "infeasible-budget.yaml").read_text()
    text = text.replace(f"budget_usd: {fix.current:.0f}", f"budget_usd: {fix.required:.0f}")
    assert f"budget_usd: {fix.required:.0f}" in text
    fixed = plan_problem(loads_problem(text, "infeasible-budget-fixed.yaml"))
    assert fixed.status == "optimal"
    assert fixed.verification == []
    assert fixed.capex_usd <= fix.required
