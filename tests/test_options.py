"""Options: every way a workload could be deployed, each within its targets, and for every
GPU that cannot serve it, the reason."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from planner.catalog import Catalog
from planner.context import prepare
from planner.io.problem_io import load_problem, loads_problem

PROBLEMS = Path(__file__).resolve().parent.parent / "problems"

SERVE = """
name: options
site:
  rack_power_kw: {rack_kw}
catalog:
  exclude: [{exclude}]
  {stock}
inference:
  - name: chat
    model: llama-3.1-8b
    requests_per_s: 10
    ttft_ms: 1000
    tpot_ms: 40
"""


def _ctx(catalog: Catalog, keep: list[str], stock: str = "", rack_kw: float = 17):  # type: ignore[no-untyped-def]
    exclude = ", ".join(g for g in catalog.gpus if g not in keep)
    text = SERVE.format(exclude=exclude, stock=stock, rack_kw=rack_kw)
    return prepare(loads_problem(textwrap.dedent(text), "options.yaml"))


def test_stock_below_one_server_rejects_the_gpu_with_its_reason(catalog: Catalog) -> None:
    ctx = _ctx(catalog, ["H100-SXM", "L40S"], stock="stock: {H100-SXM: 4}")
    (w,) = ctx.workloads
    assert {o.gpu for o in w.inference} == {"L40S"}
    reasons = w.reasons_by_gpu()["H100-SXM"]
    assert any(r.startswith("stock: only 4 x H100-SXM") for r in reasons), reasons


def test_a_server_that_fits_no_rack_is_no_option(catalog: Catalog) -> None:
    """An 8-GPU HGX H100 server draws about 10 kW: a 6 kW rack cannot hold one."""
    ctx = _ctx(catalog, ["H100-SXM", "L4"], rack_kw=6)
    (w,) = ctx.workloads
    assert {o.gpu for o in w.inference} == {"L4"}
    (reason,) = w.reasons_by_gpu()["H100-SXM"]
    assert "hgx-hopper-8gpu" in reason and "does not fit a 42U / 6 kW rack" in reason
    roomy = _ctx(catalog, ["H100-SXM", "L4"], rack_kw=17)
    assert "H100-SXM" in {o.gpu for o in roomy.workloads[0].inference}


@pytest.mark.parametrize("name", ["startup.yaml", "lab-train-and-serve.yaml", "serve-70b.yaml"])
def test_every_option_meets_its_targets(name: str) -> None:
    loaded = load_problem(PROBLEMS / name)
    ctx = prepare(loaded)
    services = {s.name: s for s in loaded.problem.inference}
    jobs = {j.name: j for j in loaded.problem.training}
    for w in ctx.workloads:
        for o in w.inference:
            svc = services[w.name]
            assert o.estimate.tpot_p99_ms <= svc.tpot_ms + 1e-6, (w.name, o)
            assert o.estimate.ttft_p99_ms <= svc.ttft_ms + 1e-6, (w.name, o)
            assert o.precision in svc.precisions
            assert o.rps_per_replica > 0
        for t in w.training:
            job = jobs[w.name]
            assert t.days <= job.deadline_days - job.release_day + 1e-6, (w.name, t)
            assert t.gpus >= 1 and (t.gpus <= catalog_gpus_per_server(ctx, t) or t.pool.fabric != "none")


def catalog_gpus_per_server(ctx, option) -> int:  # type: ignore[no-untyped-def]
    return ctx.catalog.servers[option.pool.server].gpus_per_server
