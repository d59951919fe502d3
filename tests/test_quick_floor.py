"""A service's floor tried first with light solver settings (``floors._floor_alone``): where
that try proves it, the bound is the one the full settings prove; where it does not, the full
settings solve it as before."""

from __future__ import annotations

import pytest

from planner.context import prepare
from planner.io.problem_io import load_problem
from planner.optimize import floors
from planner.optimize.built import upper
from planner.optimize.model import build
from tests.conftest import PROBLEMS


@pytest.mark.parametrize("name", ["startup.yaml", "inference-tight-power.yaml", "long-context-rag.yaml"])
def test_the_quick_floor_is_the_full_settings_floor(name: str) -> None:
    ctx = prepare(load_problem(PROBLEMS / name))
    b = build(ctx.problem, ctx.catalog, ctx.workloads)
    assert b.floors
    for service, f in b.floors.items():
        tops = [upper(r) for _, r in f.reps]
        quick = floors._floor_alone(f, service, floors.FLOOR_DET_S, tops)
        full = floors.solve_alone(f, service, floors.FLOOR_DET_S, tops)
        assert quick is not None and full is not None
        assert quick[0] == full[0]
        costs = sum(c * n for c, n in zip(f.costs, quick[1], strict=True))
        assert costs == quick[0]  # the mix found reaches the proven floor


def test_an_unproven_quick_try_falls_back_to_the_full_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    ctx = prepare(load_problem(PROBLEMS / "startup.yaml"))
    b = build(ctx.problem, ctx.catalog, ctx.workloads)
    f = b.floors["chat"]
    tops = [upper(r) for _, r in f.reps]
    monkeypatch.setattr(floors, "QUICK_FLOOR_DET_S", 1e-6)  # too short to prove anything
    calls: list[float] = []
    full = floors.solve_alone

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(args[2])
        return full(*args, **kwargs)

    monkeypatch.setattr(floors, "solve_alone", counted)
    found = floors._floor_alone(f, "chat", floors.FLOOR_DET_S, tops)
    assert calls == [floors.FLOOR_DET_S]
    assert found is not None and found[0] == full(f, "chat", floors.FLOOR_DET_S, tops)[0]
