"""The table of named limits: every row states the very quantity the model holds against
its limit; explanations measure each family by an independent re-solve; and a new family
is a class and a line in the table."""

from __future__ import annotations

import random
from typing import Any

import pytest

from planner import limits
from planner.catalog import Catalog
from planner.context import prepare
from planner.explain.diagnose import diagnose
from planner.explain.marginal import SAVING_USD, marginal_values
from planner.io.overrides import variant
from planner.io.problem_io import LoadedProblem, loads_problem
from planner.limits.base import Family, Limit, Measured
from planner.limits.table import every_limit
from planner.pipeline import plan_context, plan_problem
from planner.schema.plan import Plan
from planner.schema.problem import Problem
from planner.verify import verify
from tests.conftest import example_plan


def _only(catalog: Catalog, keep: list[str]) -> str:
    return ", ".join(g for g in catalog.gpus if g not in keep)


def assert_rows_hold(problem: Problem, catalog: Catalog, plan: Plan) -> None:
    """One row per limit of the table; each holds (floors from below); binding unknown."""
    fams = {lim.name: fam for fam, lim in every_limit(problem, catalog)}
    assert [c.name for c in plan.constraints] == list(fams)
    for c in plan.constraints:
        assert c.limit is not None and c.slack is not None
        if fams[c.name].at_least:
            assert c.used >= c.limit - 1e-9, c
            assert c.slack == pytest.approx(c.used - c.limit, abs=1e-6)
        else:
            assert c.used <= c.limit + 1e-9, c
            assert c.slack == pytest.approx(c.limit - c.used, abs=1e-6)
        assert c.binding is None  # only a re-solve says what binds


# --- p99 where the target is p99 -------------------------------------------------------

SERVE = """
name: serve
catalog:
  exclude: [{exclude}]
inference:
  - name: chat
    model: llama-3.1-70b
    precisions: [fp8]
    requests_per_s: 30
    input_tokens: 1024
    output_tokens: 256
    ttft_ms: 600
    tpot_ms: 30
    spare_replicas: 1
"""


def test_latency_rows_state_the_p99_that_the_target_binds(catalog: Catalog) -> None:
    loaded = loads_problem(SERVE.format(exclude=_only(catalog, ["B200", "H200-SXM"])), "serve.yaml")
    plan = plan_problem(loaded)
    assert plan.verification == []
    reps = plan.inference[0].replicas
    rows = {c.name: c for c in plan.constraints}
    assert rows["service:chat:tpot"].used == pytest.approx(max(r.tpot_p99_ms for r in reps))
    assert rows["service:chat:ttft"].used == pytest.approx(max(r.ttft_p99_ms for r in reps))
    assert rows["service:chat:tpot"].unit == "ms p99"
    for r in reps:
        assert r.tpot_ms == r.tpot_p99_ms and r.ttft_ms == r.ttft_p99_ms  # contract keys carry the p99
        assert r.tpot_mean_ms < r.tpot_p99_ms and r.ttft_mean_ms < r.ttft_p99_ms
    # the demand row: capacity less what one 8-GPU server holds of the worst kind (N+1 by server)
    svc = plan.inference[0]
    lost = max(min(r.count, 8 // r.gpus_per_replica) * r.rps_per_replica for r in reps)
    carried = sum(r.count * r.rps_per_replica for r in reps) - lost
    assert rows["service:chat:rate"].used == pytest.approx(carried, abs=1e-6)
    assert_rows_hold(loaded.problem, prepare(loaded).catalog, plan)
    assert svc.capacity_rps > rows["service:chat:rate"].used


# --- generated problems ------------------------------------------------------------------


def _generated(seed: int, catalog: Catalog) -> str:
    rng = random.Random(seed)
    keep = rng.sample(["H100-SXM", "H200-SXM", "L40S", "L4", "H100-NVL", "MI300X", "B200"], 3)
    services = []
    for i in range(rng.randint(1, 3)):
        model = rng.choice(["llama-3.1-8b", "mistral-7b", "qwen2.5-7b"])
        services.append(
            f"""  - name: s{i}
    model: {model}
    requests_per_s: {rng.choice([2, 5, 12, 30])}
    input_tokens: {rng.choice([256, 1024, 2048])}
    output_tokens: {rng.choice([128, 256])}
    ttft_ms: {rng.choice([800, 1500, 3000])}
    tpot_ms: {rng.choice([40, 60, 100])}
    spare_replicas: {rng.randint(0, 1)}
    min_spare_share: {rng.choice([0, 0.2])}"""
        )
    stock = f"\n  stock: {{{keep[0]}: {rng.choice([8, 16])}}}" if rng.random() < 0.5 else ""
    return f"""
name: gen-{seed}
finance:
  budget_usd: {rng.choice([400000, 900000, 3000000])}
site:
  power_kw: {rng.choice([30, 60, 200])}
  racks: {rng.randint(2, 6)}
  rack_power_kw: {rng.choice([12, 17, 40])}
catalog:
  exclude: [{_only(catalog, keep)}]{stock}
policy:
  max_gpu_types: {rng.randint(1, 2)}
training:
  - name: tune
    model: llama-3.1-8b
    method: lora
    tokens: {rng.choice([1e8, 1e9])}
    deadline_days: {rng.choice([5, 20])}
inference:
""" + "\n".join(services)


@pytest.mark.parametrize("seed", range(6))
def test_rows_hold_on_generated_problems(seed: int, catalog: Catalog) -> None:
    loaded = loads_problem(_generated(seed, catalog), f"gen-{seed}.yaml")
    plan = plan_problem(loaded)
    if plan.status == "infeasible":  # a diagnosis names only limits of the table
        assert plan.diagnosis is not None
        names = {lim.name for _, lim in every_limit(loaded.problem, prepare(loaded).catalog)}
        assert {f.constraint for f in plan.diagnosis.fixes} <= names
        return
    assert plan.verification == []
    assert_rows_hold(loaded.problem, prepare(loaded).catalog, plan)


# --- explanations: each family's marginal value is an independent re-solve ---------------

EXPLAINED = """
name: every-family
finance:
  budget_usd: 700000
site:
  power_kw: 45
  racks: 3
  rack_power_kw: 17
catalog:
  exclude: [{exclude}]
  stock: {{H100-SXM: 8}}
policy:
  max_gpu_types: 2
training:
  - name: tune
    model: llama-3.1-8b
    method: lora
    tokens: 2.0e9
    deadline_days: 3
inference:
  - name: chat
    model: llama-3.1-8b
    precisions: [fp8, bf16]
    requests_per_s: 40
    ttft_ms: 800
    tpot_ms: 35
    spare_replicas: 1
"""


@pytest.fixture(scope="module")
def explained(catalog: Catalog) -> tuple[LoadedProblem, Plan]:
    text = EXPLAINED.format(exclude=_only(catalog, ["H100-SXM", "H200-SXM", "L40S", "L4"]))
    loaded = loads_problem(text, "every-family.yaml")
    ctx = prepare(loaded)
    plan = plan_context(ctx)
    assert plan.status == "optimal" and plan.verification == []
    marginal_values(ctx, plan, workers=1)
    return loaded, plan


def test_every_family_is_measured(explained: tuple[LoadedProblem, Plan]) -> None:
    loaded, plan = explained
    families = {type(fam) for fam, _ in every_limit(loaded.problem, prepare(loaded).catalog)}
    assert families == {type(f) for f in limits.FAMILIES}  # the example exercises the whole table
    for c in plan.constraints:
        assert c.marginal_usd is not None, c.name
        assert c.binding == (c.marginal_usd < -SAVING_USD)


@pytest.mark.parametrize(
    "name",
    [
        "budget",
        "site_power",
        "racks",
        "rack_power",
        "rack_units",
        "job:tune:deadline",
        "service:chat:rate",
        "service:chat:ttft",
        "service:chat:tpot",
        "stock:H100-SXM",
        "policy:max_gpu_types",
    ],
)
def test_marginal_value_equals_an_independent_re_solve(explained: tuple[LoadedProblem, Plan], name: str) -> None:
    """The problem file moved by the row's step and solved from scratch (options and all)."""
    loaded, plan = explained
    row = next(c for c in plan.constraints if c.name == name)
    lim = next(lim for _, lim in every_limit(loaded.problem, prepare(loaded).catalog) if lim.name == name)
    assert row.step
    value: Any = lim.value + row.step
    if float(lim.value).is_integer() and float(row.step).is_integer():
        value = int(value)
    moved = plan_problem(variant(loaded, {row.path: value}))
    assert moved.status == "optimal"
    assert row.marginal_usd == pytest.approx(moved.tco_usd - plan.tco_usd, abs=0.02)


STOCK = """
name: stock
catalog:
  exclude: [{exclude}]
  {stock}
inference:
  - name: chat
    model: llama-3.1-8b
    requests_per_s: 20
"""


def test_stock_that_prunes_options_is_worth_what_a_re_solve_says(catalog: Catalog) -> None:
    """No H100 in stock: the options without H100 servers must be derived again when the
    explanation loosens the stock, or loosening it would seem to save nothing."""
    exclude = _only(catalog, ["H100-SXM", "H200-SXM"])
    loaded = loads_problem(STOCK.format(exclude=exclude, stock="stock: {H100-SXM: 0}"), "stock.yaml")
    ctx = prepare(loaded)
    plan = plan_context(ctx)
    marginal_values(ctx, plan, workers=1)
    row = next(c for c in plan.constraints if c.name == "stock:H100-SXM")
    assert row.used == 0 and row.limit == 0 and row.step == 8  # one HGX server's GPUs
    free = plan_problem(loads_problem(STOCK.format(exclude=exclude, stock=""), "free.yaml"))
    eight = plan_problem(loads_problem(STOCK.format(exclude=exclude, stock="stock: {H100-SXM: 8}"), "eight.yaml"))
    assert row.marginal_usd is not None and row.marginal_usd < -SAVING_USD
    assert row.marginal_usd == pytest.approx(eight.tco_usd - plan.tco_usd, abs=0.02)
    assert free.tco_usd < plan.tco_usd  # what the issue measured: about $45k dearer with no stock
    assert row.binding is True


# --- a new family is a class and a line in the table --------------------------------------


class SwitchCap(Family):
    """A toy family, as a contributor would add it: a cap on the switches bought."""

    pattern, unit, prunes_options = "switches", "switches", False

    def __init__(self, cap: int) -> None:
        self.cap = cap

    def limits(self, problem: Problem, catalog: Catalog) -> list[Limit]:
        return [Limit("switches", None, self.cap, elastic=True)]

    def used(self, m: Measured, limit: Limit) -> float:
        return m.extra["switches"]

    def read(self, problem: Problem, plan: Plan, m: Measured) -> None:
        m.extra["switches"] = sum(n["leaves"] + n["spines"] for n in plan.network)

    def add(self, b: Any, problem: Problem, catalog: Catalog, limit: Limit, slack: Any) -> None:
        switches = sum(f.leaves + f.spines for f in b.fabrics.values())
        b.model.add(switches <= int(limit.value) + slack).with_name(limit.name)

    def sentence(self, limit: Limit, required: float) -> str:
        return f"allow at least {required:g} switches"


PRETRAIN = """
name: toy
catalog:
  exclude: [{exclude}]
training:
  - name: pre
    model: llama-3.1-8b
    tokens: 1.0e11
    deadline_days: 10
"""


def test_a_toy_family_reaches_model_report_verifier_and_diagnosis(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    loaded = loads_problem(PRETRAIN.format(exclude=_only(catalog, ["H100-SXM"])), "toy.yaml")
    free = plan_problem(loaded)
    switches = sum(n["leaves"] + n["spines"] for n in free.network)
    assert switches >= 1  # 8B in 10 days needs more than one server: a fabric and its switches

    monkeypatch.setattr(limits, "FAMILIES", [*limits.FAMILIES, SwitchCap(switches)])
    capped = plan_problem(loaded)
    row = next(c for c in capped.constraints if c.name == "switches")
    assert (row.used, row.limit, row.slack, row.tight) == (switches, switches, 0, True)
    assert capped.verification == []

    broken = capped.model_copy(deep=True)
    broken.network[0]["leaves"] += 1  # one switch too many: the verifier re-reads the rows
    errs = verify(loaded.problem, prepare(loaded).catalog, broken)
    assert any(e.startswith("switches:") and "allowed" in e for e in errs), errs

    monkeypatch.setattr(limits, "FAMILIES", [*limits.FAMILIES[:-1], SwitchCap(0)])
    none = plan_problem(loaded)
    assert none.status == "infeasible"  # no switch, no fabric: the job cannot finish in time
    ctx = prepare(loaded)
    found = diagnose(ctx)
    fixes = {f.constraint: f.required for f in found.fixes}
    assert fixes["switches"] == switches  # the least number of switches that makes a plan
    assert any("allow at least" in s for s in found.summary)


# --- the terminal says what the JSON says ----------------------------------------------------


def _shown(x: float) -> str:
    return f"{x:,.3f}".rstrip("0").rstrip(".")


@pytest.mark.parametrize("name", ["startup.yaml", "serve-70b.yaml", "growth-5y.yaml"])
def test_the_terminal_limits_table_agrees_with_the_json(name: str) -> None:
    from rich.console import Console

    from planner.report.terminal import print_plan

    plan = example_plan(name)
    console = Console(record=True, width=220, color_system=None)
    print_plan(plan, console)
    text = console.export_text()
    lines = {line.split("│")[1].strip(): line for line in text.splitlines() if line.count("│") >= 6}
    for c in plan.constraints:
        cells = [cell.strip() for cell in lines[c.name].split("│")[1:-1]]
        assert cells[1] == f"{_shown(c.used)} {c.unit}", (c.name, cells)
        assert cells[2] == _shown(c.limit or 0) and cells[3] == _shown(c.slack or 0), (c.name, cells)
        assert cells[4] == ("tight" if c.tight else "")  # no re-solve yet: never "binding"
