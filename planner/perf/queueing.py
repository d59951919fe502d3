"""Queueing formulas the load model uses: M/G/1 waiting times (mean and tail) for a prompt
queue whose service times are a mixture of fixed values, the generalized Poisson count of
prompts a decoding request meets (and the work they bring, class by class), and the p99 of a
mixture of request groups."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

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
    while hi - lo > 1e-9 * hi:
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


def _generalized_poisson_pmf(theta: float, lam: float, top: int) -> list[float]:
    out = []
    for x in range(top + 1):
        if theta <= 0:
            out.append(1.0 if x == 0 else 0.0)
            continue
        log_p = math.log(theta) + (x - 1) * math.log(theta + x * lam) - theta - x * lam - math.lgamma(x + 1)
        out.append(math.exp(log_p))
    return out


def compound_quantile(classes: Sequence[tuple[float, float]], lam: float, q: float, bins: int = 4000) -> float:
    """The ``q`` quantile of ``sum(value_c x N_c)``, ``N_c`` generalized Poisson(``theta_c``,
    ``lam``) and independent, for classes (``theta_c``, ``value_c``): the extra work of the
    prompts of each size a decoding request meets. Convolved on a grid of ``bins`` steps."""
    live = [(t, v) for t, v in classes if t > 0 and v > 0]
    if not live:
        return 0.0
    tops = [int(t / (1 - lam) + 12 * math.sqrt(t / (1 - lam) ** 3) + 20) for t, _ in live]
    reach = sum(v * n for (_, v), n in zip(live, tops, strict=True))
    step = reach / bins
    total = np.zeros(1)
    total[0] = 1.0
    for (theta, value), top in zip(live, tops, strict=True):
        pmf = _generalized_poisson_pmf(theta, lam, top)
        grid = np.zeros(round(value * top / step) + 1)
        for n, p in enumerate(pmf):
            grid[round(value * n / step)] += p
        total = np.convolve(total, grid)
    cdf = np.cumsum(total)
    k = int(np.searchsorted(cdf, q * cdf[-1]))
    return k * step


def poisson_quantile(mean: float, q: float) -> float:
    """The smallest ``k`` with ``P(Poisson(mean) <= k) >= q``."""
    if mean <= 0:
        return 0.0
    k, term = 0, math.exp(-mean)
    total = term
    while total < q and k < 100_000:
        k += 1
        term *= mean / k
        total += term
    return float(k)


def mixture_p99(groups: Sequence[tuple[float, float, float]]) -> float:
    """The 99th percentile of requests drawn from groups (weight, mean, p99): each group's tail
    taken as exponential through its mean (as the median) and its p99,
    ``P(T > t) = 0.01 exp((p99 - t) / beta)``, ``beta = (p99 - mean) / ln 50``, and the weighted
    tails summed to 1%."""
    live = [(w, m, p) for w, m, p in groups if w > 0]
    if not live:
        return 0.0
    if any(math.isinf(p) for _, _, p in live):
        return math.inf
    total = sum(w for w, _, _ in live)

    def tail(t: float) -> float:
        out = 0.0
        for w, mean, p99 in live:
            beta = max(p99 - mean, 1e-12) / math.log(50)
            out += w * min(0.5 if t >= mean else 1.0, 0.01 * math.exp(min(50.0, (p99 - t) / beta)))
        return out / total

    lo, hi = min(m for _, m, _ in live), max(p for _, _, p in live)
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if tail(mid) <= 0.01 else (mid, hi)
    return hi
