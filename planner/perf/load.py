"""Latency under load, from the engine's iteration cost (``planner.perf.engine``).

Two kinds of load, as the issue and the benchmarks define them:

- a closed loop of N clients (``--concurrency N``), the way serving benchmarks measure
  (InferenceMAX: N clients start together, ``waves x N`` requests in all, lengths uniform
  in ``[low x L, L]``). The first wave's prompts all arrive at once and are prefilled one
  token budget at a time, so the first wave waits behind up to N prompts; afterwards the
  clients have drifted apart and a new prompt meets the steady state below;
- Poisson arrivals at a rate (``--rate R``; what the optimiser plans on): in steady state
  ``b = rate x output x TPOT`` sequences decode (Little), each iteration pays for the
  prompts that arrive meanwhile, and a prompt waits for the prompts ahead of it, an
  M/D/1 queue whose server is the prefill work. Its p99 uses the queue's exponential
  tail (Cramer-Lundberg) and the Poisson spread of prompts met while decoding.

Every time here is an iteration of ``IterationCost``; the simulator (``planner.simulate``)
replays the same iterations request by request and checks these figures.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from planner.perf.engine import Engine
from planner.perf.load_mix import MixState, RequestClass, mix_state, split_by_prefix
from planner.perf.prompt import Prompt, prompt_cost
from planner.perf.queueing import mg1_wait_mean
from planner.perf.rate_search import largest_within, lightest_within, worst_margin


@dataclass(frozen=True)
class Latency:
    """Seconds; ``batch`` is the mean number of sequences decoding."""

    ttft_s: float
    tpot_s: float
    ttft_p99_s: float
    tpot_p99_s: float
    batch: float
    requests_per_s: float
    stable: bool = True


class Load:
    """One replica shape (engine) serving requests of one size (mean input/output tokens)."""

    def __init__(self, engine: Engine, input_tokens: float, output_tokens: float) -> None:
        self.engine, self.cost, self.limits = engine, engine.cost, engine.limits
        self.isl, self.osl = max(1.0, input_tokens), max(1.0, output_tokens)
        self.ttft_fixed_s = engine.ttft_overhead_s
        # engines allocate KV blocks as sequences grow (and preempt when out): hold the mean
        # (of a sequence's own blocks: a prefix-cache hit shares the cached prefix's)
        prefix = engine.prefix
        cached = prefix.hit_rate * prefix.cached_tokens(self.isl) if prefix else 0.0
        per_seq = input_tokens - cached + output_tokens / 2
        self.max_running = max(0, min(self.limits.max_seqs, int(self.limits.kv_capacity_tokens // per_seq)))

    # --- one iteration, one prompt -----------------------------------------------------

    def _context(self, batch: float) -> float:
        return batch * (self.isl + self.osl / 2)

    def decode_iteration_s(self, batch: float) -> float:
        b = max(0, round(batch))
        return float(self.cost.iteration_s(b, self._context(b)))

    def prompt(self, batch: float) -> Prompt:
        """A prompt prefilled in chunks beside ``batch`` decoding sequences."""
        return prompt_cost(self.engine, self.isl, batch, self._context(max(0, round(batch))))

    # --- Poisson arrivals --------------------------------------------------------------

    def poisson(self, rate: float) -> Latency:
        """Steady state at ``rate`` requests/s (Poisson); ``stable`` False when it cannot keep up."""
        state = self.state(rate)
        if state is None:
            return self._unstable(rate)
        tpot_p99 = state.tpot_quantile_s(0, 0.99)
        return Latency(state.ttft_s(0), state.tpot_s, state.ttft_quantile_s(0, 0.99), tpot_p99, state.batch, rate)

    def state(self, rate: float) -> MixState | None:
        return mix_state(self.engine, [RequestClass(self.isl, self.osl, 1.0)], rate, self.max_running)

    def _unstable(self, rate: float) -> Latency:
        inf = math.inf
        return Latency(inf, inf, inf, inf, float(self.max_running), rate, stable=False)

    def saturation_rate(self) -> float:
        """Requests/s with every running slot busy (the throughput ceiling)."""
        b = self.max_running
        if b < 1:
            return 0.0
        # saturated, prompts queue: they fill the token budget together (on every attention group)
        # per request: (osl - 1) / tokens_per_step decode iterations among b sequences, plus its
        # prompt's extra work (a prefix-cache hit's or a miss's, at their shares)
        steps = (self.osl - 1) / self.cost.tokens_per_step
        per_request_s = steps * self.decode_iteration_s(b) / b
        for c in split_by_prefix(self.engine, [RequestClass(self.isl, self.osl, 1.0)])[0]:
            fit = max(1, int((self.limits.token_budget - b) // c.prefill_tokens))
            together = max(fit, self.cost.attention_dp)
            p = prompt_cost(self.engine, c.prefill_tokens, b, self._context(b), together, c.cached_tokens)
            per_request_s += c.share * p.extra_shared_s(fit)
        return 1.0 / per_request_s

    def max_rate(self, ttft_p99_s: float | None, tpot_p99_s: float | None, utilisation: float) -> float:
        """The largest Poisson rate whose p99s meet the targets, at most ``utilisation`` of saturation."""
        return largest_within(self.rate_margin(ttft_p99_s, tpot_p99_s), utilisation * self.saturation_rate())

    def max_rate_within(
        self, ttft_p99_s: float | None, tpot_p99_s: float | None, utilisation: float, rps: float
    ) -> bool:
        """Whether ``max_rate`` finds a rate above 0 and at most ``rps``: its ceiling is at most
        ``rps`` and the lightest load meets the targets (one steady state at most, where the
        search takes a dozen)."""
        ceiling = utilisation * self.saturation_rate()
        return ceiling <= rps and lightest_within(self.rate_margin(ttft_p99_s, tpot_p99_s), ceiling)

    def rate_margin(self, ttft_p99_s: float | None, tpot_p99_s: float | None) -> Callable[[float], float]:
        """The worst p99 over its target, less 1, at a rate (+inf when the replica cannot keep up)."""

        def margin(rate: float) -> float:
            state = self.state(rate)
            if state is None:
                return math.inf
            return worst_margin(
                [
                    (lambda: state.tpot_quantile_s(0, 0.99), tpot_p99_s),
                    (lambda: state.ttft_quantile_s(0, 0.99), ttft_p99_s),
                ]
            )

        return margin

    # --- a closed loop of N clients ----------------------------------------------------

    def closed_loop(self, clients: int, waves: int, low: float) -> Latency:
        """Means over ``waves x clients`` requests, as a closed-loop benchmark reports them."""
        steady = self._steady_closed(clients)
        first = self._first_wave(clients, steady.tpot_s)
        ttft = (first.mean_ttft_s + (waves - 1) * steady.ttft_s) / waves
        tpot = (first.mean_tpot_s + (waves - 1) * steady.tpot_s) / waves
        # the first wave is 1/waves of the requests: the p99 falls inside it when waves < 100
        share = max(0.0, 1 - 0.01 * waves)
        ttft_p99 = max(steady.ttft_p99_s, _quantile(first.ttfts_s, share))
        tpot_p99 = max(steady.tpot_p99_s, _quantile(first.tpots_s, share))
        return Latency(ttft, tpot, ttft_p99, tpot_p99, steady.batch, steady.requests_per_s)

    def _steady_closed(self, clients: int) -> Latency:
        running = min(clients, self.max_running)
        it, ttft, rate = self.decode_iteration_s(running), 0.0, 0.0
        p = self.prompt(running)
        for _ in range(60):
            if clients > running:  # every slot busy: a slot turns over once per request served
                rate = running / (p.latency_s + (self.osl - 1) * it)
            else:
                rate = clients / (ttft + (self.osl - 1) * it)
            rho = min(rate * p.extra_s, 0.95)
            new_it = self.decode_iteration_s(running) / (1 - rho)
            queued = (clients - running) / rate if clients > running else 0.0
            # a client's prompt meets the other clients' work only: none when it is alone
            others = (min(clients, running) - 1) / max(1, min(clients, running))
            wait = others * (new_it / 2 + mg1_wait_mean(rate, [(1.0, p.extra_s)], cap=0.95))
            new_ttft = wait + p.latency_s + queued
            if abs(new_it - it) < 1e-7 and abs(new_ttft - ttft) < 1e-6:
                break
            it, ttft = new_it, new_ttft
        p99 = self.poisson(rate) if rate > 0 else self._unstable(rate)
        return Latency(ttft, it, p99.ttft_p99_s, p99.tpot_p99_s, float(running), rate)

    def _first_wave(self, clients: int, tpot_s: float) -> _Wave:
        """Mean TTFT and TPOT of the requests sent together at the start, prefilled
        first come, first served, one token budget at a time."""
        admitted = min(clients, self.max_running)
        total = round(self.isl)
        budget = self.limits.token_budget
        ends: list[float] = []  # iteration end times
        firsts: list[int] = []  # iteration index of each admitted prompt's first token
        t, decoding, prompt_done, current = 0.0, 0, 0, 0
        while current < admitted:
            room = max(1, budget - decoding)
            tokens, pairs, finished, prompts = 0, 0.0, 0, 0
            while room > 0 and current < admitted:
                chunk = min(room, total - prompt_done)
                pairs += self.cost.chunk_pairs(prompt_done, chunk)
                tokens, room, prompt_done, prompts = tokens + chunk, room - chunk, prompt_done + chunk, prompts + 1
                if prompt_done == total:
                    finished, current, prompt_done = finished + 1, current + 1, 0
            t += float(self.cost.iteration_s(decoding, self._context(decoding), tokens, pairs, prompts))
            ends.append(t)
            firsts.extend([len(ends) - 1] * finished)
            decoding += finished
        ttfts = [ends[j] + self.ttft_fixed_s for j in firsts]
        tpots = []
        for j in firsts:
            during = min(len(ends) - 1 - j, int(self.osl) - 1)  # tokens decoded while the wave prefills
            slow = ends[j + during] - ends[j]
            tpots.append((slow + (self.osl - 1 - during) * tpot_s) / max(1.0, self.osl - 1))
        queued = clients - admitted  # wait for a running request to finish, then a steady prompt
        if queued:
            later = t + (self.osl - 1) * tpot_s + self.prompt(admitted).latency_s
            ttfts += [later] * queued
            tpots += [tpot_s] * queued
        return _Wave(ttfts, tpots)


@dataclass(frozen=True)
class _Wave:
    ttfts_s: list[float]
    tpots_s: list[float]

    @property
    def mean_ttft_s(self) -> float:
        return sum(self.ttfts_s) / len(self.ttfts_s)

    @property
    def mean_tpot_s(self) -> float:
        return sum(self.tpots_s) / len(self.tpots_s)


def _quantile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]
