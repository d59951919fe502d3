"""Queueing formulas the load model uses: M/G/1 waiting times (mean and tail) for a prompt
queue whose service times are a mixture of fixed values, the generalized Poisson count of
prompts a decoding request meets (and the work they bring, class by class), and the p99 of a
mixture of request groups."""

from __future__ import annotations

import bisect
import math
import statistics
from collections.abc import Sequence

import numpy as np

_NORMAL = statistics.NormalDist()

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
    """The wait exceeded with probability ``1 - q`` on the tail of ``mg1_tail``."""
    c, theta = mg1_tail(rate, services)
    if c <= 0:
        return 0.0
    if theta <= 0:
        return math.inf
    return max(0.0, math.log(c / (1 - q)) / theta) if c > 1 - q else 0.0


def mg1_tail(rate: float, services: Services) -> tuple[float, float]:
    """``(C, theta)`` of the exponential tail ``P(W > t) ~ C exp(-theta t)`` (Cramer-Lundberg),
    ``theta`` the positive root of ``rate (E[exp(theta S)] - 1) = theta`` and
    ``C = (1 - rho) / (rate E[S exp(theta S)] - 1)`` (at most ``rho``); ``(0, inf)`` when
    nothing queues, ``(1, 0)`` when the queue grows without bound."""
    rho = utilisation(rate, services)
    if rho <= 0:
        return 0.0, math.inf
    if rho >= 1:
        return 1.0, 0.0

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
    return c, theta


def wait_sum_quantile(
    parts: Sequence[tuple[float, np.ndarray, np.ndarray]], tail: tuple[float, float], q: float
) -> float:
    """The ``q`` quantile of ``A + W``: ``A`` drawn from ``parts`` (weight, values, their
    probabilities), ``W`` independent with ``P(W > t) = C exp(-theta t)`` for ``t >= 0`` (the
    rest an atom at 0; ``tail = (C, theta)`` from ``mg1_tail``). Bisected to a relative 1e-4 on
    ``P(A + W > x) > 1 - q``."""
    c, theta = tail
    if c > 0 and theta <= 0:
        return math.inf
    values = np.concatenate([v for _, v, _ in parts])
    probs = np.concatenate([w * p for w, _, p in parts])
    probs = probs / probs.sum()
    exceeds = _Exceeds(values, probs, c, theta, 1 - q)
    lo = 0.0
    hi = float(values.max()) + (math.log(max(c, 1e-300) / (1 - q)) / theta if c > 1 - q else 0.0)
    while hi - lo > 1e-4 * hi + 1e-9:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if exceeds(mid) else (lo, mid)
    return hi


class _Exceeds:
    """Whether ``P(A + W > x) > level``, ``A`` taking ``values`` with ``probs`` and
    ``P(W > t) = c exp(-theta t)``. Between two sorted values ``v_k <= x < v_k+1`` the
    probability is ``above_k + c exp(-theta x) sum_i<=k p_i exp(theta v_i)``: a lookup and an
    exponential per step, where a sum over every value per step was a sixth of startup's option
    enumeration. Within ``SURE`` of ``level`` that sum decides (the closed form's rounding
    could), so every answer is the sum's, to the last bit."""

    SURE = 1e-9

    def __init__(self, values: np.ndarray, probs: np.ndarray, c: float, theta: float, level: float) -> None:
        self.values, self.probs, self.c, self.theta, self.level = values, probs, c, theta, level
        keep = probs > 0
        order = np.argsort(values[keep], kind="stable")
        v, p = values[keep][order], probs[keep][order]
        self.sorted = v.tolist()
        self.above = [*np.cumsum(p[::-1])[::-1][1:].tolist(), 0.0]  # the mass after each value
        # log of sum_i<=k p_i exp(theta v_i), accumulated stably; no wait (c = 0): unused
        self.log_mass = (np.logaddexp.accumulate(np.log(p) + theta * v) if c > 0 else np.zeros(len(v))).tolist()

    def __call__(self, x: float) -> bool:
        k = bisect.bisect_right(self.sorted, x) - 1
        if k < 0:
            closed = 1.0
        else:
            closed = self.above[k] + (self.c * math.exp(self.log_mass[k] - self.theta * x) if self.c > 0 else 0.0)
        if abs(closed - self.level) > self.SURE:
            return closed > self.level
        gap = x - self.values
        beyond = self.c * np.exp(-self.theta * np.maximum(gap, 0.0)) if self.c > 0 else np.zeros_like(gap)
        return float(self.probs @ np.where(gap < 0, 1.0, beyond)) > self.level


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


def generalized_poisson_mixture_quantile(seeds: Sequence[tuple[float, float]], lam: float, q: float) -> float:
    """The ``q`` quantile of a mixture of generalized Poisson counts: (weight, ``theta``) pairs,
    one ``lam``; the count of prompts a request meets when its start finds a random backlog."""
    live = [(w, t) for w, t in seeds if w > 0]
    top = int(max(t / (1 - lam) + 12 * math.sqrt(max(t, 1e-9) / (1 - lam) ** 3) for _, t in live) + 20)
    x = np.arange(top + 1, dtype=np.float64)
    x_lam = x * lam
    log_factorial = np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, top + 1)))])
    # every seed's terms at once, a row each: the same operations on the same numbers as one
    # seed at a time (a tenth of the option enumeration went to numpy's per-call overhead here)
    seeded = [(w, t) for w, t in live if t > 0]
    thetas = np.array([t for _, t in seeded])[:, None]
    log_thetas = np.array([math.log(t) for _, t in seeded])[:, None]
    log_p = log_thetas + (x - 1) * np.log(thetas + x_lam) - thetas - x_lam - log_factorial
    weighted = np.array([w for w, _ in seeded])[:, None] * np.exp(log_p)
    if len(seeded) == len(live):
        pmf = np.add.reduce(weighted, axis=0)  # along rows: added one after the other, in order
    else:  # a seed of no prompts: its mass at 0, in its place in the sum
        pmf = np.zeros(top + 1)
        rows = iter(weighted)
        for weight, theta in live:
            if theta <= 0:
                pmf[0] += weight
            else:
                pmf += next(rows)
    cdf = np.cumsum(pmf)
    return float(min(int(np.searchsorted(cdf, q * cdf[-1])), top))


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
    if mean > 400:  # Cornish-Fisher: within one count of the exact quantile this far out
        z = _NORMAL.inv_cdf(q)
        return float(math.ceil(mean + z * math.sqrt(mean) + (z * z - 1) / 6 - 0.5))
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
    live = [(w, min(m, p), p) for w, m, p in groups if w > 0]
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


QUANTILE_LEVELS = (0.5, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999)


def mixture_quantile(groups: Sequence[tuple[float, Sequence[float]]], q: float) -> float:
    """The ``q`` quantile of requests drawn from groups (weight, the group's quantiles at
    ``QUANTILE_LEVELS``): each group's tail ``P(T > t)`` interpolated log-linearly between its
    quantiles (exponential beyond the last), the weighted tails summed to ``1 - q``."""
    live = [(w, list(v)) for w, v in groups if w > 0]
    if not live:
        return 0.0
    if any(math.isinf(x) for _, v in live for x in v):
        return math.inf
    total = sum(w for w, _ in live)
    logs = [math.log(1 - lv) for lv in QUANTILE_LEVELS]

    def tail(values: list[float], t: float) -> float:
        values = list(np.maximum.accumulate(values))  # quantiles never fall with the level
        if t <= values[0]:
            return 0.5
        for i in range(1, len(values)):
            if t <= values[i]:
                span = values[i] - values[i - 1]
                f = (t - values[i - 1]) / span if span > 0 else 1.0
                return math.exp(logs[i - 1] + f * (logs[i] - logs[i - 1]))
        span = values[-1] - values[-2]
        slope = (logs[-1] - logs[-2]) / span if span > 0 else -math.inf
        return math.exp(logs[-1] + slope * (t - values[-1])) if slope > -math.inf else 0.0

    lo = min(v[0] for _, v in live)
    hi = max(v[-1] for _, v in live) * 2 + 1e-9
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if sum(w * tail(v, mid) for w, v in live) / total <= 1 - q else (mid, hi)
    return hi
