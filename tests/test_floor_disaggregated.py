"""A service whose options include disaggregated (prefill/decode) kinds gets a proven cost floor.

Two services of the generated benchmark (bench_large seed 11) kept a floor of 0 after their
solves' limit: the services-alone solves linearised at level 1, whose LP holds none of the
prefill/decode pairs' flows, and the cut they give the full model said nothing ($263k of bound).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from planner.context import prepare
from planner.io.problem_io import load_problem
from planner.optimize import floors
from planner.optimize.model import build
from planner.perf.memo import Memo

# The two services as the generator wrote them, on its catalog (13 GPU types excluded).
PROBLEM = """\
name: disaggregated-floors
horizon_years: 4
finance: {budget_usd: 2.0e9, electricity_usd_per_kwh: 0.1, pue: 1.3, colocation_usd_per_kw_month: 120}
site: {power_kw: 200000, racks: 20000, rack_units: 42, rack_power_kw: 40}
catalog:
  exclude: [GB200, Jetson-AGX-Orin, Ascend-310P, Apple-M3-Ultra, Hygon-K100, BR100, MLU220, MLU370-X8,
            Ascend-910B, Gaudi3, MI355X, MI325X, MI300X]
inference:
  - {name: small, model: llama-3.1-8b, precisions: [bf16, fp8, int8, int4], requests_per_s: 21.0,
     input_tokens: 3400, output_tokens: 530, ttft_ms: 3900.0, tpot_ms: 90.0}
  - {name: moe, model: mixtral-8x7b, precisions: [int8, int4], requests_per_s: 12.0,
     input_tokens: 5600, output_tokens: 260, ttft_ms: 1700.0, tpot_ms: 61.0}
"""


def test_floors_with_disaggregated_kinds_are_proven_and_cut(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(floors, "_FLOORS", Memo())  # solved here, not kept from another test
    path = tmp_path / "p.yaml"
    path.write_text(PROBLEM)
    ctx = prepare(load_problem(path))
    b = build(ctx.problem, ctx.catalog, ctx.workloads)
    cuts = {c.name: int(c.linear.domain[0]) for c in b.model.proto.constraints if c.name.endswith(":floor")}
    for name in ("small", "moe"):
        f = b.floors[name]
        assert any(o.disaggregated for o, _ in f.reps)  # the case in question
        assert f.found is not None
        bound, counts = f.found
        mix_usd = sum(c * n for c, n in zip(f.costs, counts, strict=True))
        assert 0 < bound == mix_usd  # proven: the bound is the cost of the mix found
        # no more than the cheapest plan of one aggregated kind alone (a hand calculation)
        alone = [
            math.ceil(f.need / per) * cost
            for (o, _), cost, per in zip(f.reps, f.costs, f.pers, strict=True)
            if not o.disaggregated and per > 0
        ]
        assert bound <= min(alone)
        assert cuts[f"service:{name}:floor"] == bound  # and the full model holds it
