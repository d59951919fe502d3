"""Kept answers (service cost floors, training estimates) are the answers a fresh process gives."""

from __future__ import annotations

import pytest

from planner.context import prepare
from planner.io.overrides import variant
from planner.io.problem_io import load_problem
from planner.optimize import floors
from planner.optimize.model import build
from planner.perf import training as perf_training
from planner.perf.memo import Memo
from tests.conftest import PROBLEMS


def _floors(electricity: float) -> list[tuple[str, int]]:
    base = load_problem(PROBLEMS / "startup.yaml")
    ctx = prepare(variant(base, {"finance.electricity_usd_per_kwh": electricity}))
    model = build(ctx.problem, ctx.catalog, ctx.workloads).model
    return [(c.name, int(c.linear.domain[0])) for c in model.proto.constraints if c.name.endswith(":floor")]


def test_kept_floors_equal_fresh_ones_and_follow_the_prices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(floors, "_FLOORS", Memo())
    first = _floors(0.12)
    other = _floors(0.30)
    again = _floors(0.12)  # from the kept floors
    monkeypatch.setattr(floors, "_FLOORS", Memo())
    monkeypatch.setattr(perf_training, "KEPT", Memo())
    fresh = _floors(0.12)
    assert first and first == again == fresh
    assert [b for _, b in other] > [b for _, b in first]  # dearer power: a higher floor
