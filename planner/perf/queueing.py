"""Queueing formulas the load model uses: M/G/1 waiting times (mean and tail) for a prompt
queue whose service times are a mixture of fixed values, the generalized Poisson count of
prompts a decoding request meets, and quantiles of a mixture of request groups."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

Services = Sequence[tuple[float, float]]  # (share of the prompts, service seconds)


def utilisation(rate: float, services: Services) -> float:
    return rate * sum(p * s for p, s in services)


def mg1_wait_mean(rate: float, services: Services, cap: float = 0.999) -> float:
    """Pollaczek-Khinchine: ``W = rate E[S^2] / (2 (1 - rho))`` (``rho`` capped below 1)."""
    rho = min(utilisation(rate, services), cap)
    if rho <= 0:
        return 0.0
    second = sum(p * s * s for p, s in services)
    return rate * second / (2 * (1 - rho))


def mg1_wait_quantile(rate: float, services: Services, q: float) -> float:
    """The wait exceeded with probability ``1 - q``: the exponential tail
    ``P(W > t) ~ C exp(-theta t)`` (Cramer-Lundberg), ``theta`` the positive root of
    ``rate (E[exp(theta S)] - 1) = theta`` and ``C = (1 - rho) / (rate E[S exp(theta S)] - 1)``
    (at most ``rho``)."""
    rho = utilisation(rate, services)
    if rho <= 0:
        return 0.0
    if rho >= 1:
        return math.inf

    def excess(theta: float) -> float:
        return rate * (sum(p * math.exp(theta * s) for p, s in services) - 1) - theta

    longest = max(s for _, s in services)
    lo, hi = 0.0, 1.0 / longest
    while excess(hi) < 0:  # grow until the root is bracketed
        hi *= 2
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if excess(mid) < 0 else (lo, mid)
    theta = (lo + hi) / 2
    # never above P(W > 0) = rho: an arrival finds the queue busy with that probability
    c = min(rho, (1 - rho) / (rate * sum(p * s * math.exp(theta * s) for p, s in services) - 1))
    return max(0.0, math.log(c / (1 - q)) / theta) if c > 1 - q else 0.0


def generalized_poisson_quantile(theta: float, lam: float, q: float) -> float:
    """The ``q`` quantile of Consul's generalized Poisson distribution: the total progeny of a
    Poisson(``theta``) seed when each member brings Poisson(``lam``) more (``lam`` < 1).
    ``P(X = x) = theta (theta + x lam)^(x-1) exp(-theta - x lam) / x!``."""
    if theta <= 0:
        return 0.0
    mean = theta / (1 - lam)
    sd = math.sqrt(theta / (1 - lam) ** 3)
    top = int(mean + 40 * sd + 50)
    total, x = 0.0, 0
    log_theta = math.log(theta)
    while x <= top:
        log_p = log_theta + (x - 1) * math.log(theta + x * lam) - theta - x * lam - math.lgamma(x + 1)
        total += math.exp(log_p)
        if total >= q:
            return float(x)
        x += 1
    return float(top)


Quantile = Callable[[float], float]


def mixture_quantile(groups: Sequence[tuple[float, Quantile]], q: float) -> float:
    """The ``q`` quantile of requests drawn from groups (weight, quantile function): the ``t``
    at which ``sum(w (1 - F(t))) = 1 - q``, each group's ``F`` inverted from its quantiles."""
    live = [(w, f) for w, f in groups if w > 0]
    total = sum(w for w, _ in live)
    if not live:
        return 0.0

    def cdf(f: Quantile, t: float) -> float:
        lo, hi = 0.0, 0.9999
        if f(hi) <= t:
            return 1.0
        if f(lo) > t:
            return 0.0
        for _ in range(30):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if f(mid) <= t else (lo, mid)
        return lo

    def tail(t: float) -> float:
        return sum(w * (1 - cdf(f, t)) for w, f in live) / total

    lo = min(f(0.0) for _, f in live)
    hi = max(f(0.9999) for _, f in live)
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if tail(mid) <= 1 - q else (mid, hi)
    return hi
