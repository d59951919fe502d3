"""The jobs' cost floor (optimize.job_floor): the least the training jobs' GPUs cost, all jobs
together, as a cut. Held against the whole model: minimising the jobs' part of the cost there,
with every service and limit present and no cut, reaches exactly the floor; and the cut changes
no optimum."""

from __future__ import annotations

import pytest
from ortools.sat.python import cp_model

from planner.catalog import Catalog
from planner.context import prepare
from planner.finance import Rates
from planner.io.problem_io import load_problem, loads_problem
from planner.optimize import fleet_cuts, job_floor
from planner.optimize import model as model_module
from planner.optimize.built import Built
from planner.optimize.model import build
from planner.optimize.solve import solve
from tests.conftest import PROBLEMS
from tests.test_consolidate import _problem

# two jobs that may run at once (the second on shared GPUs only after the first), and one after
JOBS = """
training:
  - name: pre
    model: {params_b: 1.0}
    tokens: 4.0e10
    deadline_days: 12
  - name: tune
    model: llama-3.1-8b
    method: lora
    tokens: 2.0e9
    deadline_days: 10
  - name: after-pre
    model: {params_b: 1.0}
    method: full
    tokens: 1.0e10
    deadline_days: 20
    after: [pre]
"""


def _built(catalog: Catalog, monkeypatch: pytest.MonkeyPatch, cut: bool, text: str = "") -> Built:
    ctx = prepare(loads_problem(text or _problem(catalog) + JOBS, "eight-and-jobs.yaml"))
    with monkeypatch.context() as m:
        if not cut:
            m.setattr(fleet_cuts, "add_job_floor", lambda *args: None)
        return build(ctx.problem, ctx.catalog, ctx.workloads)


def _floor(b: Built) -> int:
    (c,) = [c for c in b.model.proto.constraints if c.name == "jobs:floor"]
    return int(c.linear.domain[0])


def test_the_floor_is_the_least_the_jobs_cost_in_the_whole_model(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    with_cut = _built(catalog, monkeypatch, True)
    floor = _floor(with_cut)
    plain = _built(catalog, monkeypatch, False)
    assert not [c for c in plain.model.proto.constraints if c.name == "jobs:floor"]
    problem = prepare(loads_problem(_problem(catalog) + JOBS, "x.yaml")).problem
    pools = {o.pool for xs in plain.train.values() for o, _ in xs if o.rent_usd_per_gpu_hour is None}
    m = plain.model.clone()
    m.minimize(job_floor._cost(plain, problem, Rates.of(problem), pools))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_deterministic_time = 60
    assert solver.solve(m) == cp_model.OPTIMAL
    # the jobs alone and the whole model agree: nothing here limits the pools' sizes
    assert round(solver.objective_value) == floor > 0


def test_the_floor_changes_no_optimum(catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    tcos = []
    for cut in (True, False):
        solved = solve(_built(catalog, monkeypatch, cut).model, 60)
        assert solved.status == "optimal"
        tcos.append(solved.objective)
    assert tcos[0] == tcos[1]


def test_the_floor_is_asked_again_only_when_the_jobs_change(catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    solves: list[int] = []
    real = job_floor._solve

    def counted(alone: cp_model.CpModel) -> int | None:
        solves.append(1)
        return real(alone)

    monkeypatch.setattr(job_floor, "_solve", counted)
    monkeypatch.setattr(job_floor, "_FLOORS", job_floor.Memo(10))
    text = _problem(catalog) + JOBS
    first = _floor(_built(catalog, monkeypatch, True, text))
    again = _floor(_built(catalog, monkeypatch, True, text.replace("budget_usd: 50000000", "budget_usd: 40000000")))
    assert (first, len(solves)) == (again, 1)  # a budget is no part of the jobs alone
    later = _floor(_built(catalog, monkeypatch, True, text.replace("deadline_days: 10", "deadline_days: 30")))
    assert len(solves) == 2 and later <= first  # a looser deadline: asked again, and never dearer


def test_the_fabric_floor_is_at_most_what_the_jobs_and_their_leaves_cost_in_the_whole_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """pretrain-cluster's jobs need a fabric: the floor that pays for one leaf of each fabric they use
    is above the jobs' floor, and the whole model (every limit, no cut), minimising the jobs' part and
    those fabrics' leaves, pays no less (more: its fabrics need more than one leaf)."""
    ctx = prepare(load_problem(PROBLEMS / "pretrain-cluster.yaml"))

    def built(fleet: bool) -> Built:
        with monkeypatch.context() as m:
            m.setattr(model_module, "a_fleet", lambda b: fleet)
            return build(ctx.problem, ctx.catalog, ctx.workloads)

    cuts = built(True).model.proto.constraints
    floors = {c.name: int(c.linear.domain[0]) for c in cuts if c.name.startswith("jobs:")}
    assert floors["jobs:fabric_floor"] > floors["jobs:floor"]
    plain = built(False)
    assert not [c for c in plain.model.proto.constraints if c.name.startswith("jobs:") and "floor" in c.name]
    rates = Rates.of(ctx.problem)
    pools = {o.pool for xs in plain.train.values() for o, _ in xs if o.rent_usd_per_gpu_hour is None}
    fabrics = {f for xs in plain.train.values() for o, _ in xs if (f := job_floor.cabled(plain, o)) is not None}
    m = plain.model.clone()
    leaves = sum(plain.switch_usd[f] * plain.fabrics[f].leaves for f in sorted(fabrics))
    m.minimize(job_floor._cost(plain, ctx.problem, rates, pools) + leaves)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_deterministic_time = 60.0
    assert solver.solve(m) == cp_model.OPTIMAL
    assert round(solver.objective_value) >= floors["jobs:fabric_floor"]
