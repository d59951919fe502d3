"""The rate search against bisection: the same boundary to the same tolerance, in fewer steps."""

from __future__ import annotations

import math
import random

import pytest

from planner.perf.rate_search import TOLERANCE, largest_within, worst_margin


def _margin(root: float, power: float, saturation: float, calls: list[float]):  # type: ignore[no-untyped-def]
    def margin(rate: float) -> float:
        calls.append(rate)
        if rate >= saturation:
            return math.inf
        return (rate / root) ** power - 1

    return margin


def _bisect(ok, ceiling: float) -> float:  # type: ignore[no-untyped-def]
    lo, hi = ceiling * 1e-6, ceiling
    while hi - lo > TOLERANCE * ceiling:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo


def test_finds_the_boundary_to_the_tolerance_in_fewer_steps_than_bisection() -> None:
    ours = theirs = 0
    for seed in range(40):
        rng = random.Random(seed)
        ceiling = rng.uniform(0.5, 50)
        root = ceiling * rng.uniform(0.01, 0.99)
        saturation = rng.uniform(root * 1.001, ceiling * 1.5)
        power = rng.uniform(0.5, 8)
        calls: list[float] = []
        found = largest_within(_margin(root, power, saturation, calls), ceiling)
        assert (found / root) ** power - 1 <= 0 and found < saturation  # it meets the targets
        assert root - found <= TOLERANCE * ceiling  # and misses no more than the tolerance
        bisect_calls: list[float] = []
        plain = _margin(root, power, saturation, bisect_calls)
        reference = _bisect(lambda r, plain=plain: plain(r) <= 0, ceiling)
        assert abs(found - reference) <= 2 * TOLERANCE * ceiling
        ours, theirs = ours + len(calls), theirs + len(bisect_calls) + 2  # bisection's two end checks
    assert ours < 0.9 * theirs


def test_edges() -> None:
    assert largest_within(lambda r: -1.0, 10.0) == 10.0  # every rate meets the targets
    assert largest_within(lambda r: 1.0, 10.0) == 0.0  # none does
    assert largest_within(lambda r: -1.0, 0.0) == 0.0
    # the first target missed decides; no target at all is always met
    assert worst_margin([(lambda: 2.0, 1.0), (lambda: 1 / 0, 1.0)]) == 1.0
    assert worst_margin([(lambda: 0.5, 1.0), (lambda: 0.9, 1.0)]) == pytest.approx(-0.1)
    assert worst_margin([(lambda: 5.0, None)]) == -1.0
