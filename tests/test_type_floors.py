"""Closing cuts (optimize.type_floors): what a service costs without one of its GPU types, as a
cut on its flag. Each cut is checked against the whole model with that type closed, and the cuts
must change no optimum."""

from __future__ import annotations

import re

import pytest
from ortools.sat.python import cp_model

from planner.catalog import Catalog
from planner.context import prepare
from planner.io.problem_io import loads_problem
from planner.optimize import fleet_cuts
from planner.optimize.built import Built
from planner.optimize.model import build
from planner.optimize.solve import solve
from tests.test_consolidate import _problem

CUT = re.compile(r"service:(?P<service>.+):without:(?P<gpu>.+)")


def _built(catalog: Catalog, cuts: bool, monkeypatch: pytest.MonkeyPatch) -> Built:
    ctx = prepare(loads_problem(_problem(catalog), "eight.yaml"))
    with monkeypatch.context() as m:
        if not cuts:
            m.setattr(fleet_cuts, "add_closing_cuts", lambda b: None)
        return build(ctx.problem, ctx.catalog, ctx.workloads)


def _cuts(b: Built) -> list[tuple[str, str, int]]:
    """(service, GPU, what the service costs without it) of each closing cut in the model."""
    out = []
    for c in b.model.proto.constraints:
        found = CUT.fullmatch(c.name)
        if found:
            # cost - step x flag >= without: the domain's lower end is ``without``
            out.append((found["service"], found["gpu"], int(c.linear.domain[0])))
    return out


def test_each_cut_holds_in_the_whole_model_with_its_type_closed(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    with_cuts = _built(catalog, True, monkeypatch)
    cuts = _cuts(with_cuts)
    assert cuts, "the eight services' floor mixes should depend on some type"
    plain = _built(catalog, False, monkeypatch)
    assert not _cuts(plain)
    for service, gpu, without in cuts:
        m = plain.model.clone()
        f = plain.floors[service]
        m.add(m.get_int_var_from_proto_index(plain.gpu_type_used[gpu].index) == 0)
        cost = sum(c * m.get_int_var_from_proto_index(r.index) for c, (_, r) in zip(f.costs, f.reps, strict=True))
        m.minimize(cost)
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = 1
        solver.parameters.max_deterministic_time = 20
        status = solver.solve(m)
        if status == cp_model.INFEASIBLE:
            continue  # the type cannot be closed at all: the cut says less than the truth
        assert status == cp_model.OPTIMAL, (service, gpu)
        assert solver.objective_value >= without, (service, gpu, solver.objective_value, without)
        assert without > f.found[0]  # a cut is only made when closing costs more than the floor


def test_the_cuts_change_no_optimum(catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    tcos = []
    for cuts in (True, False):
        solved = solve(_built(catalog, cuts, monkeypatch).model, 60)
        assert solved.status == "optimal"
        tcos.append(solved.objective)
    assert tcos[0] == tcos[1]


JOB = """
training:
  - name: tune
    model: llama-3.1-8b
    method: lora
    tokens: 1.0e9
    deadline_days: 30
"""


def test_job_type_cuts_change_no_optimum(catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    """With a training job beside the services, each option's GPU type flag bounds the job's
    options on it; the optimum is the same with the cuts and without."""
    text = _problem(catalog) + JOB
    tcos = []
    for cuts in (True, False):
        ctx = prepare(loads_problem(text, "eight-and-a-job.yaml"))
        with monkeypatch.context() as m:
            if not cuts:
                m.setattr(fleet_cuts, "add_closing_cuts", lambda b: None)
            b = build(ctx.problem, ctx.catalog, ctx.workloads)
        names = [c.name for c in b.model.proto.constraints]
        assert any(n.startswith("job:tune:type:") for n in names) == cuts
        solved = solve(b.model, 60)
        assert solved.status == "optimal"
        tcos.append(solved.objective)
        chosen = [o for o, x in b.train["tune"] if solved.value(x)]
        assert len(chosen) == 1
        if chosen[0].rent_usd_per_gpu_hour is None:  # an owned option: its type is bought
            assert solved.value(b.gpu_type_used[chosen[0].pool.gpu]) == 1
    assert tcos[0] == tcos[1]
