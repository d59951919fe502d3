"""A replica serving Poisson traffic of several request sizes at once (a mix's buckets, or one).

In steady state at ``rate`` requests/s:

- ``b = rate x sum(share x (output - 1)) x TPOT`` sequences decode (Little), holding their
  prompts and half their outputs as context; a decode-only iteration of that batch takes
  ``T_d``;
- every prompt adds its prefill work to the iteration it rides in; prompts arriving during
  one prefill iteration share the next (up to the token budget), and with it the fixed
  prefill costs: ``TPOT = T_d / (1 - rate x E[extra])``;
- prompts queue for iterations: an M/G/1 queue whose service, per prompt, is its own work
  plus its share of the iteration (``queueing.mg1_*``); TTFT = the iteration under way + the
  wait + its own prefill;
- a request's TPOT grows with the prompts prefilled while it decodes, and a longer life meets
  more of them: their count is generalized Poisson (``queueing.generalized_poisson_quantile``).

The simulator (``planner.simulate``) replays the same iterations request by request; the
example plans' p99s are checked against it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner.perf.engine import Engine
from planner.perf.prompt import Prompt, prompt_cost
from planner.perf.queueing import (
    compound_quantile,
    generalized_poisson_quantile,
    mg1_wait_mean,
    mg1_wait_quantile,
    poisson_quantile,
)


@dataclass(frozen=True)
class RequestClass:
    input_tokens: float
    output_tokens: float
    share: float  # of the replica's requests


@dataclass(frozen=True)
class MixState:
    """The steady state at one rate; quantiles per request class."""

    rate: float
    classes: tuple[RequestClass, ...]
    prompts: tuple[Prompt, ...]
    iteration_s: float  # mean, prefill included: every class's mean TPOT
    decode_s: float  # a decode-only iteration
    batch: float
    services: tuple[tuple[float, float], ...]  # (share, seconds) in the prompt queue
    extra_s: float  # mean iteration time a prompt adds
    shared_s: float = 0.0  # other prompts' work in a prompt's own iteration (prompts arriving together)
    packed: tuple[tuple[float, float], ...] = ()  # (share, seconds): the queue when a backlog packs the budget
    work_s: float = 0.0  # a prompt's own prefill work (mean over classes), no fixed costs
    extras: tuple[tuple[float, float], ...] = ()  # (share, seconds): each class's extra iteration time

    def ttft_s(self, j: int) -> float:
        wait = mg1_wait_mean(self.rate, self.services)
        return self.decode_s / 2 + wait + self.prompts[j].latency_s + self.shared_s

    def ttft_quantile_s(self, j: int, q: float) -> float:
        """The iteration under way, the wait behind a backlog (which packs prompts into full
        token budgets), and the prompt's own iteration: its prefill plus the work of the prompts
        that arrived with it (their count at the same quantile, Poisson over one iteration)."""
        wait = mg1_wait_quantile(self.rate, self.packed, q)
        others = poisson_quantile(self.rate * self.iteration_s, q)
        return q * self.iteration_s + wait + self.prompts[j].latency_s + others * self.work_s

    def tpot_quantile_s(self, j: int, q: float) -> float:
        """The decode iteration plus the prompts prefilled while the request decodes, spread over
        its tokens. Their count is generalized Poisson (a long life meets more prompts); in a mix
        each class's prompts add their own work (a long prompt's far more than a short one's)."""
        steps = max(1.0, self.classes[j].output_tokens - 1)
        seed = self.rate * steps * self.decode_s
        rho = min(self.rate * self.extra_s, 0.999)
        if len(self.classes) == 1:
            met = generalized_poisson_quantile(seed, rho, q) * self.extra_s
        else:
            extras = [(c.share * seed, e) for c, (_, e) in zip(self.classes, self.extras, strict=True)]
            met = compound_quantile(extras, rho, q)
        return max(self.decode_s + met / steps, self.iteration_s if q >= 0.5 else 0.0)


def mix_state(engine: Engine, classes: list[RequestClass], rate: float, max_running: int) -> MixState | None:
    """The steady state of ``classes`` at ``rate`` (Poisson); None when the replica cannot keep up."""
    total = sum(c.share for c in classes)
    cls = tuple(RequestClass(c.input_tokens, c.output_tokens, c.share / total) for c in classes)
    steps = sum(c.share * max(0.0, c.output_tokens - 1) for c in cls)
    held = sum(c.share * max(0.0, c.output_tokens - 1) * (c.input_tokens + c.output_tokens / 2) for c in cls)
    per_seq = held / steps if steps > 0 else sum(c.share * c.input_tokens for c in cls)
    batch, it, sharing = 1.0, 0.0, 1.0
    prompts: tuple[Prompt, ...] = ()
    for _ in range(60):
        context = batch * per_seq
        base = float(engine.cost.iteration_s(max(0, round(batch)), context))
        prompts = tuple(prompt_cost(engine, c.input_tokens, batch, context, sharing) for c in cls)
        sharing = _sharing(engine, cls, rate, batch, max(it, base))
        extra = sum(c.share * p.extra_shared_s(sharing) for c, p in zip(cls, prompts, strict=True))
        if rate * extra >= 1:
            return None
        it = base / (1 - rate * extra)
        latency = sum(c.share * p.latency_s for c, p in zip(cls, prompts, strict=True))
        new_batch = min(float(max_running), rate * steps * it + rate * latency)
        if abs(new_batch - batch) < 0.01:
            break
        batch = max(new_batch, 1.0)
    if rate * steps * it > max_running:
        return None
    services = tuple(
        (c.share, p.extra_shared_s(sharing) + base * p.chunks / sharing) for c, p in zip(cls, prompts, strict=True)
    )
    if rate * sum(s * t for s, t in services) >= 1:
        return None
    work = sum(c.share * (p.extra_s - p.fixed_s) for c, p in zip(cls, prompts, strict=True))
    room = engine.limits.token_budget - max(0, round(batch))
    packed = tuple(
        (c.share, p.extra_s - p.fixed_s + (p.fixed_s + base * p.chunks) / max(1, int(room // c.input_tokens)))
        for c, p in zip(cls, prompts, strict=True)
    )
    extras = tuple((c.share, p.extra_shared_s(sharing)) for c, p in zip(cls, prompts, strict=True))
    return MixState(rate, cls, prompts, it, base, batch, services, extra, (sharing - 1) * work, packed, work, extras)


def _sharing(engine: Engine, cls: tuple[RequestClass, ...], rate: float, batch: float, iteration_s: float) -> float:
    """Prompts per prefill iteration: those that arrived during the iteration before (at least
    one, else there is no prefill), ``x / (1 - exp(-x))`` for ``x = rate x iteration``, as many
    as the token budget takes."""
    mean_input = sum(c.share * c.input_tokens for c in cls)
    room = engine.limits.token_budget - max(0, round(batch))
    fit = max(1, int(room // max(1.0, mean_input)))
    x = rate * iteration_s
    arrived = x / -math.expm1(-x) if x > 1e-9 else 1.0
    return min(float(fit), arrived)
