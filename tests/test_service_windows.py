"""Services over time: a service may start on a day, end on a day, or start when the training
jobs it serves end; its GPUs come from the same pools as the jobs', so the GPUs that train a
model can serve it afterwards. Checked against the same problems without the window."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from planner.catalog import load_catalog
from planner.cli import app
from planner.io.overrides import variant
from planner.io.problem_io import load_problem, loads_problem
from planner.pipeline import plan_problem
from planner.verify import verify
from tests.conftest import PROBLEMS

EXAMPLE = PROBLEMS / "train-then-serve.yaml"


@pytest.fixture(scope="module")
def both():
    loaded = load_problem(EXAMPLE)
    after = plan_problem(loaded)
    always = plan_problem(variant(loaded, {"inference.chat-8b.after": []}))
    return loaded, after, always


def test_the_service_starts_when_the_job_ends(both) -> None:
    _, after, _ = both
    assert after.status == "optimal" and after.verification == []
    (job,) = after.training
    (svc,) = after.inference
    assert svc.start_day == pytest.approx(job.end_day, abs=0.01)
    assert svc.end_day == pytest.approx(3 * 365)


def test_train_then_serve_on_one_pool_costs_less_than_serving_from_day_0(both) -> None:
    _, after, always = both
    assert always.status == "optimal" and always.verification == []
    assert always.inference[0].start_day is None
    assert after.tco_usd < always.tco_usd
    # the job's GPUs serve afterwards: the service holds no GPUs of its own beyond the job's pool
    job_pool = (after.training[0].server, after.training[0].gpu)
    assert any((r.server, r.gpu) == job_pool for r in after.inference[0].replicas)


def test_disjoint_windows_share_a_pool() -> None:
    exclude = ", ".join(g for g in load_catalog().gpus if g != "L40S")
    base = f"""
name: windows
horizon_years: 1
catalog:
  exclude: [{exclude}]
policy:
  simplicity_tolerance: 0
inference:
  - name: day-shift
    model: llama-3.1-8b
    requests_per_s: 30
    start_day: 0
    end_day: 180
  - name: night-shift
    model: llama-3.1-8b
    requests_per_s: 30
    start_day: {{second}}
"""
    apart = plan_problem(loads_problem(base.format(second=180), "w.yaml"))
    overlapping = plan_problem(loads_problem(base.format(second=100), "w.yaml"))
    for plan in (apart, overlapping):
        assert plan.status == "optimal" and plan.verification == []
    gpus = lambda plan: sum(r.count * r.gpus_per_server for r in plan.servers)  # noqa: E731
    assert gpus(apart) < gpus(overlapping)
    held = {s.name: sum(r.count * r.gpus_per_replica for r in s.replicas) for s in apart.inference}
    assert max(held.values()) <= gpus(apart) < sum(held.values())  # the GPUs serve both shifts in turn


def test_the_verifier_catches_a_service_held_while_the_job_still_runs(both) -> None:
    loaded, after, _ = both
    catalog = load_catalog()
    broken = after.model_copy(deep=True)
    # pretend the service starts on day 0: the job and the service then overlap on one pool
    broken.inference[0].start_day = 0.0
    errors = verify(loaded.problem, catalog, broken)
    assert any("starts on day 0" in e for e in errors), errors
    assert any("need" in e and "GPUs at once" in e for e in errors), errors  # and the pool overflows


def test_bad_windows_are_input_errors(tmp_path) -> None:
    text = EXAMPLE.read_text()
    cases = {
        "unknown job": text.replace("after: [pretrain-8b]", "after: [pretrain-70b]"),
        "start after end": text.replace("after: [pretrain-8b]", "start_day: 300\n    end_day: 100"),
        "beyond the horizon": text.replace("after: [pretrain-8b]", "end_day: 5000"),
    }
    for label, body in cases.items():
        path = tmp_path / "p.yaml"
        path.write_text(body)
        run = CliRunner().invoke(app, ["solve", str(path), "--no-simulate"])
        assert run.exit_code == 2, (label, run.output)
        assert "Traceback" not in run.output, (label, run.output)
        assert "chat-8b" in run.output, (label, run.output)  # the service named
