"""Time sharing split into groups of workloads that may overlap: the same optimum as one
cumulative over every workload of a pool, and the groups as the windows and chains say."""

from __future__ import annotations

import random

import pytest

from planner.catalog import load_catalog
from planner.context import prepare
from planner.io.problem_io import loads_problem
from planner.optimize import time_sharing
from planner.optimize.model import build
from planner.optimize.solve import solve
from planner.optimize.time_sharing import INF, Item, groups


def _item(name: str, earliest: int, latest: int) -> Item:
    return Item(name, 0, earliest, latest)


def test_chained_or_disjoint_workloads_are_apart_and_overlapping_ones_together() -> None:
    a, b, c = _item("a", 0, 1000), _item("b", 500, 1500), _item("c", 1500, 2000)
    # b overlaps a; c starts when b's window ends (touching is not overlapping)
    assert [[i.name for i in g] for g in groups([a, b, c], {})] == [["a", "b"], ["c"]]
    # b waits for a: they never run at once
    assert [[i.name for i in g] for g in groups([a, b, c], {"b": {"a"}})] == [["a"], ["b"], ["c"]]
    # linked through a third: a-b apart by the chain, but both overlap d
    d = _item("d", 0, INF)
    assert [[i.name for i in g] for g in groups([a, b, d], {"b": {"a"}})] == [["a", "b", "d"]]


def _random_problem(rng: random.Random) -> str:
    exclude = ", ".join(g for g in load_catalog().gpus if g != "L40S")
    text = f"name: share\ncatalog:\n  exclude: [{exclude}]\ntraining:\n"
    names: list[str] = []
    for k in range(rng.randint(2, 4)):
        release = rng.choice([0, 0, rng.randint(1, 20)])
        window = rng.randint(10, 40)
        after = [rng.choice(names)] if names and rng.random() < 0.4 else []
        if after:  # room for the predecessor first
            release, window = release, window + 30
        tokens = rng.choice([1e11, 2e11, 4e11])
        text += (
            f"  - {{name: j{k}, model: {{params_b: 1.0}}, tokens: {tokens}, release_day: {release}, "
            f"deadline_days: {release + window}, after: [{', '.join(after)}]}}\n"
        )
        names.append(f"j{k}")
    return text


@pytest.mark.parametrize("seed", range(6))
def test_groups_give_the_optimum_of_one_cumulative_per_pool(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    ctx = prepare(loads_problem(_random_problem(random.Random(seed)), "share.yaml"))
    split = solve(build(ctx.problem, ctx.catalog, ctx.workloads).model)
    monkeypatch.setattr(time_sharing, "groups", lambda items, waits: [items])
    whole = solve(build(ctx.problem, ctx.catalog, ctx.workloads).model)
    assert split.status == whole.status
    if split.status == "optimal":
        assert split.objective == whole.objective
