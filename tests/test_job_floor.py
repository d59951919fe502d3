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
from planner.io.problem_io import loads_problem
from planner.optimize import fleet_cuts, job_floor
from planner.optimize.built import Built
from planner.optimize.model import build
from planner.optimize.solve import solve
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
