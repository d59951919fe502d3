"""The jobs' fabric cuts (``fleet_cuts.add_job_fabric_cuts``): a job on a fabric's pool needs one of
its leaves. The cut is implied by the model, so it may change no optimum: checked on two examples
whose jobs run on fabrics, with the fleet cuts forced on at build (made for fleets of 8 services or more)."""

from __future__ import annotations

import pytest

from planner.context import prepare
from planner.io.problem_io import load_problem
from planner.optimize import model as model_module
from planner.optimize.budget import run_budget
from planner.optimize.model import build
from planner.pipeline import _solved
from tests.conftest import PROBLEMS


def _optimum(name: str, cuts: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int, set[str]]:
    """(least TCO, its proven bound, the fabrics of the jobs' options that carry a cut)."""
    ctx = prepare(load_problem(PROBLEMS / name))
    with monkeypatch.context() as m:
        m.setattr(model_module, "a_fleet", lambda b: cuts)
        b = build(ctx.problem, ctx.catalog, ctx.workloads)
    with run_budget(60.0):
        solved = _solved(b, ctx.problem, 60.0, None, ties=False)
    assert solved.status == "optimal"
    fabrics = {c.name.rsplit(":", 1)[1] for c in b.model.proto.constraints if ":leaf:" in c.name}
    return round(solved.objective), round(solved.bound), fabrics


@pytest.mark.parametrize("name", ["pretrain-cluster.yaml", "lab-train-and-serve.yaml"])
def test_the_cuts_change_no_optimum(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with_cuts, bound, fabrics = _optimum(name, True, monkeypatch)
    plain, _, none = _optimum(name, False, monkeypatch)
    assert fabrics and not none  # forced on: the jobs have options on fabrics; off: no cut
    assert with_cuts == plain == bound
