"""``wait_sum_quantile`` against the bisection it replaced: the sum of the tail's probability over
every value at each step (the same steps, so the same answer to the last bit), and against a
Monte Carlo draw of ``A + W``."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.perf.queueing import wait_sum_quantile

Parts = list[tuple[float, np.ndarray, np.ndarray]]


def _by_summing(parts: Parts, tail: tuple[float, float], q: float) -> float:
    c, theta = tail
    values = np.concatenate([v for _, v, _ in parts])
    probs = np.concatenate([w * p for w, _, p in parts])
    probs = probs / probs.sum()

    def exceed(x: float) -> float:
        gap = x - values
        beyond = c * np.exp(-theta * np.maximum(gap, 0.0)) if c > 0 else np.zeros_like(values)
        return float(probs @ np.where(gap < 0, 1.0, beyond))

    lo = 0.0
    hi = float(values.max()) + (math.log(max(c, 1e-300) / (1 - q)) / theta if c > 1 - q else 0.0)
    while hi - lo > 1e-4 * hi + 1e-9:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if exceed(mid) > 1 - q else (lo, mid)
    return hi


def _part(draw: st.DrawFn) -> tuple[float, np.ndarray, np.ndarray]:
    n = draw(st.integers(1, 12))
    values = draw(st.lists(st.floats(0.0, 2.0), min_size=n, max_size=n))
    weights = draw(st.lists(st.floats(0.0, 1.0), min_size=n, max_size=n))
    if sum(weights) == 0:
        weights[0] = 1.0
    probs = np.array(weights) / sum(weights)
    return draw(st.floats(0.01, 1.0)), np.array(values), probs


@st.composite
def _cases(draw: st.DrawFn) -> tuple[Parts, tuple[float, float], float]:
    parts = [_part(draw) for _ in range(draw(st.integers(1, 3)))]
    c = draw(st.sampled_from([0.0, draw(st.floats(1e-6, 1.0))]))
    theta = math.inf if c == 0 else draw(st.floats(0.05, 200.0))
    return parts, (c, theta), draw(st.sampled_from([0.5, 0.9, 0.99, 0.999]))


@settings(max_examples=400, deadline=None)
@given(_cases())
def test_the_same_answer_as_summing_at_every_step(case: tuple[Parts, tuple[float, float], float]) -> None:
    parts, tail, q = case
    assert wait_sum_quantile(parts, tail, q) == _by_summing(parts, tail, q)


def test_repeated_values_and_a_value_at_zero() -> None:
    parts: Parts = [(1.0, np.array([0.0, 0.3, 0.3, 0.3, 1.2]), np.array([0.5, 0.1, 0.1, 0.1, 0.2]))]
    for tail in [(0.0, math.inf), (0.4, 3.0), (0.999, 0.5)]:
        for q in (0.5, 0.6, 0.8, 0.99):
            assert wait_sum_quantile(parts, tail, q) == _by_summing(parts, tail, q)


def test_against_a_monte_carlo_draw() -> None:
    rng = np.random.default_rng(3)
    values, probs = np.array([0.02, 0.05, 0.4]), np.array([0.6, 0.3, 0.1])
    c, theta, q = 0.7, 9.0, 0.99
    n = 400_000
    a = rng.choice(values, size=n, p=probs)
    # W: 0 with probability 1 - c, else exponential with rate theta (P(W > t) = c exp(-theta t))
    w = np.where(rng.random(n) < c, rng.exponential(1 / theta, size=n), 0.0)
    drawn = float(np.quantile(a + w, q))
    assert wait_sum_quantile([(1.0, values, probs)], (c, theta), q) == pytest.approx(drawn, rel=0.01)
