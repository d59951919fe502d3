"""The largest request rate a replica serves within its latency targets.

A rate is evaluated by its steady state (a few milliseconds each, and option enumeration
asks for thousands), so the search matters: bisection to a thousandth of the ceiling takes
a dozen states. The latency margin (the worst p99 over its target, less 1) is smooth in the
rate until the replica saturates, so regula falsi on the margin (Illinois variant: an end
that stays put twice has its margin halved, so both ends keep moving) finds the same boundary
to the same tolerance in fewer states (startup's options: 1,329 against 1,595). Where the
margin is infinite (unstable), the step is a bisection.
"""

from __future__ import annotations

import math
from collections.abc import Callable

TOLERANCE = 1e-3  # of the ceiling: below what a plan can tell apart
FLOOR = 1e-6  # of the ceiling: the lowest rate tried


def largest_within(margin: Callable[[float], float], ceiling: float) -> float:
    """The largest rate in ``(0, ceiling]`` whose ``margin`` is at most 0, to ``TOLERANCE`` x
    ceiling (0 when even ``FLOOR`` x ceiling misses). ``margin`` returns +inf when the rate
    cannot be served at all; it need only be right in sign, and roughly in size."""
    f_lo = _at_lightest(margin, ceiling)
    if f_lo is None:
        return 0.0
    lo = ceiling * FLOOR
    hi = ceiling
    f_hi = margin(hi)
    if f_hi <= 0:
        return ceiling
    tol = TOLERANCE * ceiling
    side = 0
    while hi - lo > tol:
        x = (lo + hi) / 2
        if math.isfinite(f_hi) and f_hi > f_lo:
            x = lo + (hi - lo) * (-f_lo) / (f_hi - f_lo)
        # at least half a tolerance from either end: every step shrinks the bracket
        x = min(max(x, lo + tol / 2), hi - tol / 2)
        f = margin(x)
        if f <= 0:
            lo, f_lo = x, f
            if side < 0 and math.isfinite(f_hi):
                f_hi /= 2
            side = -1
        else:
            hi, f_hi = x, f
            if side > 0:
                f_lo /= 2
            side = 1
    return lo


def lightest_within(margin: Callable[[float], float], ceiling: float) -> bool:
    """Whether ``largest_within`` finds a rate above 0: the lightest rate it tries meets the targets."""
    return _at_lightest(margin, ceiling) is not None


def _at_lightest(margin: Callable[[float], float], ceiling: float) -> float | None:
    """The margin at the lightest rate tried (``FLOOR`` x ceiling) when it meets the targets; None
    when it does not, or there is no rate to try."""
    if ceiling <= 0:
        return None
    f = margin(ceiling * FLOOR)
    return f if f <= 0 else None


def worst_margin(pairs: list[tuple[Callable[[], float], float | None]]) -> float:
    """The largest ``p99 / target - 1`` over (p99 getter, target) pairs, stopping at the first
    target missed (its margin is then enough to place the next try); -1 with no target."""
    worst = -1.0
    for p99, target in pairs:
        if target is None:
            continue
        m = p99() / target - 1 if target > 0 else math.inf
        if m > 0:
            return m
        worst = max(worst, m)
    return worst
