"""A replica serving Poisson traffic of several request sizes at once (a mix's buckets, or one).

In steady state at ``rate`` requests/s:

- ``b = rate x sum(share x (output - 1)) x TPOT`` sequences decode (Little), holding their
  prompts and half their outputs as context; a decode-only iteration of that batch takes
  ``T_d``;
- every prompt adds its prefill work to the iteration it rides in; prompts arriving during
  one prefill iteration share the next (up to the token budget), and with it the fixed
  prefill costs: ``TPOT = T_d / (1 - rate x E[extra])``;
- prompts queue for iterations: an M/G/1 queue whose service, per prompt, is its own work
  plus its share of an iteration packed as full as the token budget allows (a backlog packs
  it; ``queueing.mg1_*``); TTFT = the iteration under way + the wait + its own prefill;
- a request's TPOT grows with the prompts prefilled while it decodes, and a longer life meets
  more of them: their count is generalized Poisson (``queueing.generalized_poisson_quantile``).

With a prefix cache (``Engine.prefix``) each class splits in two, the prompts that hit (their
shared prefix cached: fewer tokens to prefill, less KV of their own) and those that miss, and a
class's quantiles are those of its two halves' mixture (``queueing.mixture_quantile``). With
speculative decoding an iteration is a speculative step yielding ``tokens_per_step`` tokens per
sequence: a request decodes in ``(output - 1) / tokens_per_step`` steps, and its TPOT is the
step's time over ``tokens_per_step``.

The simulator (``planner.simulate``) replays the same iterations request by request; the
example plans' p99s are checked against it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from planner.perf.engine import Engine
from planner.perf.prompt import Prompt, prompt_cost
from planner.perf.queueing import (
    compound_quantile,
    generalized_poisson_mixture_quantile,
    mg1_tail,
    mg1_wait_mean,
    poisson_quantile,
    wait_sum_quantile,
)
from planner.perf.rate_search import largest_within, worst_margin


@dataclass(frozen=True)
class RequestClass:
    input_tokens: float
    output_tokens: float
    share: float  # of the replica's requests
    cached_tokens: float = 0.0  # of the prompt, found in the prefix cache (not prefilled)

    @property
    def prefill_tokens(self) -> float:
        return self.input_tokens - self.cached_tokens

    @property
    def held_tokens(self) -> float:
        """KV tokens a sequence holds of its own, mean over its life (prompt and half its output)."""
        return self.prefill_tokens + self.output_tokens / 2


Subclasses = tuple[tuple[int, float], ...]  # (index of a class the state runs, its share of the asked class)


def split_by_prefix(engine: Engine, classes: list[RequestClass]) -> tuple[list[RequestClass], list[Subclasses]]:
    """The classes a replica with ``engine.prefix`` runs: each asked class as its misses and its
    hits (shares ``1 - h`` and ``h``; one of them when ``h`` is 0 or 1, or the prompt is no longer
    than the prefix), and for each asked class the ones it became."""
    prefix = engine.prefix
    out: list[RequestClass] = []
    groups: list[Subclasses] = []
    for c in classes:
        cached = prefix.cached_tokens(c.input_tokens) if prefix else 0
        if not cached:
            groups.append(((len(out), 1.0),))
            out.append(c)
            continue
        h = prefix.hit_rate if prefix else 0.0
        halves = [(1 - h, 0.0), (h, float(cached))]
        mine = []
        for weight, skip in halves:
            if weight > 0:
                mine.append((len(out), weight))
                out.append(RequestClass(c.input_tokens, c.output_tokens, c.share * weight, skip))
        groups.append(tuple(mine))
    return out, groups


@dataclass(frozen=True)
class MixState:
    """The steady state at one rate; quantiles per request class."""

    rate: float
    classes: tuple[RequestClass, ...]
    prompts: tuple[Prompt, ...]
    iteration_s: float  # mean, prefill included: every class's mean TPOT
    decode_s: float  # a decode-only iteration
    batch: float
    extra_s: float  # mean iteration time a prompt adds
    shared_s: float = 0.0  # other prompts' work in a prompt's own iteration (prompts arriving together)
    packed: tuple[tuple[float, float], ...] = ()  # (share, seconds): the queue when a backlog packs the budget
    work_s: float = 0.0  # a prompt's own prefill work (mean over classes), no fixed costs
    extras: tuple[tuple[float, float], ...] = ()  # (share, seconds): each class's extra iteration time
    overhead_s: float = 0.0  # of a prompt's latency, the part before the engine sees it
    fits: tuple[int, ...] = ()  # per class: prompts of its size one iteration's token budget takes
    # (probability, seconds): the iteration a prompt arrives in, prefill or decode-only
    arrival_iterations: tuple[tuple[float, float], ...] = ()
    engine: Engine | None = None
    per_seq_tokens: float = 0.0  # context a decoding sequence holds, mean
    max_running: int = 1
    # per class asked about, the classes it runs as (a prefix cache's hits and misses); (): the same
    groups: tuple[Subclasses, ...] = ()
    tokens_per_step: float = 1.0  # speculative decoding: tokens a step yields per sequence

    @property
    def tpot_s(self) -> float:
        """Mean time per output token."""
        return self.iteration_s / self.tokens_per_step

    @cached_property
    def _tail(self) -> tuple[float, float]:
        """``mg1_tail`` of the packed queue: asked for by every quantile of the state (half of a
        problem's bisections for it were the same state's again)."""
        return mg1_tail(self.rate, self.packed)

    def _subclasses(self, j: int) -> Subclasses:
        return self.groups[j] if self.groups else ((j, 1.0),)

    def ttft_s(self, j: int) -> float:
        return sum(w * self._ttft_mean_s(i) for i, w in self._subclasses(j))

    def ttft_quantile_s(self, j: int, q: float) -> float:
        """Of the one class ``j`` runs as, or of the mixture of its hits and misses: both wait in
        the same queue, so the mixture is one sum of that wait and, drawn by their shares, what
        each meets under way plus its own prefill."""
        subs = self._subclasses(j)
        if len(subs) == 1:
            return self._ttft_quantile_s(subs[0][0], q)
        parts = [
            (w * weight, values + self.prompts[i].latency_s, probs)
            for i, w in subs
            for weight, values, probs in self._under_way(i)
        ]
        return wait_sum_quantile(parts, self._tail, q)

    def tpot_quantile_s(self, j: int, q: float) -> float:
        """Hits and misses decode alike (the same context and output); they differ only in the
        prompts queued behind their own prefill: the misses' (longer) is taken for both."""
        return self._tpot_quantile_s(self._subclasses(j)[0][0], q)

    def _ttft_mean_s(self, j: int) -> float:
        wait = mg1_wait_mean(self.rate, self.packed)
        return self.decode_s / 2 + wait + self.prompts[j].latency_s + self.shared_s

    def _ttft_quantile_s(self, j: int, q: float) -> float:
        """The iteration under way, the wait behind a backlog (which packs prompts into full
        token budgets), and the prompt's own iteration: its prefill plus the work of the prompts
        that arrived with it (their count at the same quantile, Poisson over one iteration)."""
        tail = self._tail
        return self.prompts[j].latency_s + wait_sum_quantile(self._under_way(j), tail, q)

    def _under_way(self, j: int) -> list[tuple[float, np.ndarray, np.ndarray]]:
        """What a prompt meets before its wait: the rest of the iteration it arrives in (a
        prefill or a decode-only one, length-biased) and the work of the prompts arriving in
        that iteration, which share its own (their count Poisson, as many as its iteration's
        token budget takes beside it; the rest queue, counted in the wait)."""
        beside = (self.fits[j] if self.fits else 2) - 1
        out = []
        u = (np.arange(16) + 0.5) / 16
        for weight, length in self.arrival_iterations:
            if weight <= 0:
                continue
            mean = self.rate * length
            n = np.arange(int(mean + 8 * math.sqrt(mean) + 8))
            pmf = np.exp(n * math.log(max(mean, 1e-300)) - mean - np.array([math.lgamma(k + 1) for k in n]))
            values = (u[:, None] * length + np.minimum(n, beside)[None, :] * self.work_s).ravel()
            probs = np.broadcast_to(pmf[None, :] / 16, (16, len(n))).ravel()
            out.append((weight, values, probs))
        return out

    def _tpot_quantile_s(self, j: int, q: float) -> float:
        """The decode iteration plus the prompts prefilled while the request decodes, spread over
        its tokens. Their count is generalized Poisson (a long life meets more prompts); in a mix
        each class's prompts add their own work (a long prompt's far more than a short one's).
        Speculative steps: per step as for plain decoding, over the tokens a step yields."""
        steps = max(1.0, (self.classes[j].output_tokens - 1) / self.tokens_per_step)
        seed = self.rate * (steps * self.decode_s + self._behind_s(j))
        rho = min(self.rate * self.extra_s, 0.999)
        extras = [(c.share * seed, e) for c, (_, e) in zip(self.classes, self.extras, strict=True)]
        if len(self.classes) == 1:
            seeds = self._seeds_after_a_backlog(j, steps)
            met = generalized_poisson_mixture_quantile(seeds, rho, q) * self.extra_s
            met_mean = sum(w * t for w, t in seeds) / (1 - rho) * self.extra_s
        else:
            met = compound_quantile(extras, rho, q)
            met_mean = sum(t * e for t, e in extras) / (1 - rho)
        # the batch a request decodes beside is itself random (about Poisson), and over a long
        # life it barely changes: its slower decode iterations add to the prompts' delay as
        # independent, near-normal excesses do
        slower = self._decode_at_quantile_s(q) - self.decode_s
        excess = math.hypot(max(0.0, slower), max(0.0, met - met_mean) / steps)
        step = max(self.decode_s + met_mean / steps + excess, self.iteration_s if q >= 0.5 else 0.0)
        return step / self.tokens_per_step

    def _decode_at_quantile_s(self, q: float) -> float:
        if self.engine is None:
            return self.decode_s
        b = min(float(self.max_running), poisson_quantile(self.batch, q))
        return float(self.engine.cost.iteration_s(round(b), b * self.per_seq_tokens))

    def _seeds_after_a_backlog(self, j: int, steps: int | float, points: int = 12) -> list[tuple[float, float]]:
        """The Poisson seed of the prompts a request meets, by how long it queued: prompts that
        arrived while it waited (beyond what its iteration took along) are still to prefill when
        it starts decoding. The wait: none, or (with probability ``C``) the exponential tail of
        ``queueing.mg1_tail``, in ``points`` equally likely values."""
        prefill = self.prompts[j].latency_s - self.overhead_s
        base = self.rate * (steps * self.decode_s + prefill)
        took = (self.fits[j] - 1) / self.rate if self.fits else 0.0
        c, theta = self._tail
        if c <= 0 or not math.isfinite(theta) or theta <= 0:
            return [(1.0, base)]
        out = [(1.0 - c, base)]
        for i in range(points):
            wait = math.log(points / (i + 0.5)) / theta  # the tail's ((i + 0.5) / points) quantile
            out.append((c / points, base + self.rate * max(0.0, wait - took)))
        return out

    def _behind_s(self, j: int) -> float:
        """Arrival time whose prompts are still to prefill when the request's first token comes:
        those that arrived during its own prefill, and those that queued behind it beyond what
        its iteration's token budget took along."""
        prefill = self.prompts[j].latency_s - self.overhead_s
        fit = self.fits[j] if self.fits else 1
        spill = max(0.0, mg1_wait_mean(self.rate, self.packed) - (fit - 1) / self.rate)
        return prefill + spill


def mix_state(engine: Engine, classes: list[RequestClass], rate: float, max_running: int) -> MixState | None:
    """The steady state of ``classes`` at ``rate`` (Poisson); None when the replica cannot keep up."""
    split, groups = split_by_prefix(engine, classes)
    total = sum(c.share for c in split)
    cls = tuple(RequestClass(c.input_tokens, c.output_tokens, c.share / total, c.cached_tokens) for c in split)
    decoded = sum(c.share * max(0.0, c.output_tokens - 1) for c in cls)
    held = sum(c.share * max(0.0, c.output_tokens - 1) * (c.input_tokens + c.output_tokens / 2) for c in cls)
    per_seq = held / decoded if decoded > 0 else sum(c.share * c.input_tokens for c in cls)
    per_step = engine.cost.tokens_per_step
    steps = decoded / per_step  # decode iterations per request, mean
    batch, it, sharing = 1.0, 0.0, 1.0
    seen: tuple[tuple[float, float], ...] = ()
    prompts: tuple[Prompt, ...] = ()
    for _ in range(60):
        context = batch * per_seq
        base = float(engine.cost.iteration_s(max(0, round(batch)), context))
        prompts = tuple(prompt_cost(engine, c.prefill_tokens, batch, context, sharing, c.cached_tokens) for c in cls)
        shared_before = sharing
        sharing, seen = _sharing(engine, cls, rate, batch, base, prompts)
        extra = sum(c.share * p.extra_shared_s(sharing) for c, p in zip(cls, prompts, strict=True))
        if rate * extra >= 1:
            return None
        it = base / (1 - rate * extra)
        latency = sum(c.share * p.latency_s for c, p in zip(cls, prompts, strict=True))
        new_batch = min(float(max_running), rate * steps * it + rate * latency)
        if abs(new_batch - batch) < max(0.01, 1e-3 * batch):
            break
        if max(new_batch, 1.0) == batch and sharing == shared_before:
            # below one sequence the batch stays at 1 and the test above never passes: the next
            # iteration would repeat this one exactly, to the last bit (a light load's state
            # took all 60 iterations, a third of the option enumeration of bench_large)
            break
        batch = max(new_batch, 1.0)
    if rate * steps * it > max_running:
        return None
    work = sum(c.share * (p.extra_s - p.fixed_s) for c, p in zip(cls, prompts, strict=True))
    room = engine.limits.token_budget - max(0, round(batch))
    packed = tuple(
        (c.share, p.extra_s - p.fixed_s + (p.fixed_s + base * p.chunks) / max(1, int(room // c.prefill_tokens)))
        for c, p in zip(cls, prompts, strict=True)
    )
    if rate * sum(s * t for s, t in packed) >= 1:
        return None
    extras = tuple((c.share, p.extra_shared_s(sharing)) for c, p in zip(cls, prompts, strict=True))
    fits = tuple(max(1, int(room // c.prefill_tokens)) for c in cls)
    return MixState(
        rate,
        cls,
        prompts,
        it,
        base,
        batch,
        extra,
        (sharing - 1) * work,
        packed,
        work,
        extras,
        engine.ttft_overhead_s,
        fits,
        seen,
        engine,
        per_seq,
        max_running,
        tuple(groups) if len(split) > len(classes) else (),
        per_step,
    )


def _sharing(
    engine: Engine, cls: tuple[RequestClass, ...], rate: float, batch: float, base_s: float, prompts: tuple[Prompt, ...]
) -> tuple[float, tuple[tuple[float, float], ...]]:
    """Prompts per prefill iteration: those that arrived during the iteration before, given at
    least one did (else there is no prefill), as many as the token budget takes. And the
    iteration a prompt arrives in: (probability, length) for a prefill and a decode-only one,
    length-biased (a long iteration catches more arrivals).

    The iteration before is a prefill iteration (longer: ``base + fixed + n x work``) or a
    decode-only one (``base``); which follows which is a two-state chain (a prefill iteration
    follows one during which a prompt arrived), so at high rates, where prefill iterations
    follow each other, the longer ones set how many prompts share the next."""
    mean_input = sum(c.share * c.prefill_tokens for c in cls)
    room = engine.limits.token_budget - max(0, round(batch))
    fit = float(max(1, int(room // max(1.0, mean_input))))
    work = sum(c.share * (p.extra_s - p.fixed_s) / p.chunks for c, p in zip(cls, prompts, strict=True))
    fixed = engine.cost.prefill_fixed_s
    x_d = rate * base_s
    a = -math.expm1(-x_d)
    if a < 1e-12:
        return 1.0, ((1.0, base_s),)
    n, pi = 1.0, 0.0
    for _ in range(50):
        x_p = rate * (base_s + fixed + n * work)
        b = -math.expm1(-x_p)
        pi = a / (1 - b + a)  # share of iterations that prefill
        new = max(1.0, min(fit, (pi * x_p + (1 - pi) * x_d) / (pi * b + (1 - pi) * a)))
        converged = abs(new - n) < 1e-4
        n = new
        if converged:
            break
    t_p = base_s + fixed + n * work
    seen = pi * t_p + (1 - pi) * base_s
    return n, ((pi * t_p / seen, t_p), ((1 - pi) * base_s / seen, base_s))


def running_limit(engine: Engine, classes: list[RequestClass]) -> int:
    """Sequences a replica runs at once: its scheduler's cap, or as many as the KV cache holds
    at the classes' mean footprint (prompt and half the output; a prefix-cache hit's own part)."""
    classes, _ = split_by_prefix(engine, classes)
    total = sum(c.share for c in classes) or 1.0
    per_seq = sum(c.share * c.held_tokens for c in classes) / total
    limits = engine.limits
    return max(1, min(limits.max_seqs, int(limits.kv_capacity_tokens // max(per_seq, 1.0))))


def mix_max_rate(
    engine: Engine, classes: list[RequestClass], ttft_p99_s: float | None, tpot_p99_s: float | None, ceiling: float
) -> float:
    """The largest Poisson rate (at most ``ceiling``) at which every class of the mix, sharing
    the replica, meets the p99 targets; 0 when none does."""
    running = running_limit(engine, classes)

    def margin(rate: float) -> float:
        state = mix_state(engine, classes, rate, running)
        if state is None:
            return math.inf
        pairs: list[tuple[Callable[[], float], float | None]] = []
        for j in range(len(classes)):
            pairs.append((lambda j=j: state.tpot_quantile_s(j, 0.99), tpot_p99_s))  # type: ignore[misc]
            pairs.append((lambda j=j: state.ttft_quantile_s(j, 0.99), ttft_p99_s))  # type: ignore[misc]
        return worst_margin(pairs)

    return largest_within(margin, ceiling)


def colocated_factor(
    engine: Engine,
    classes: list[RequestClass],
    capacities: list[float],
    ttft_p99_s: float | None,
    tpot_p99_s: float | None,
) -> float:
    """The share of its classes' own capacities (requests/s, each served alone) a replica keeps
    when it serves them together in their shares: the largest rate of the mix meeting the
    targets for every class, over the rate the own capacities time-share to (at most 1; 0 when
    no rate of the mix meets the targets)."""
    total = sum(c.share for c in classes)
    timeshare = 1.0 / sum(c.share / total / cap for c, cap in zip(classes, capacities, strict=True))
    return min(1.0, mix_max_rate(engine, classes, ttft_p99_s, tpot_p99_s, timeshare) / timeshare)
