"""Disaggregated serving: prefill replicas and decode replicas, each sized for its own phase.

Splitwise (Patel et al., ISCA 2024) and DistServe (Zhong et al., OSDI 2024) run a request's
prompt on a prefill replica, move its KV cache to a decode replica, and generate there. Each
phase then runs without the other's interference, on the replica kind (or GPU) that suits it.
The model, built on the same iteration cost as aggregated serving (``planner.perf.engine``):

- **prefill replica**: prompts arrive as a Poisson stream and are prefilled first come, first
  served, alone in their iterations (no decode batch beside them), as many side by side as the
  token budget (and attention data parallelism) allows. The queue is M/D/1 whose service is a
  prompt's share of such an iteration; TTFT = wait + the prompt's own prefill + the KV
  transfer + the per-request overhead. The p99 wait uses the queue's exponential tail
  (``queueing.mg1_wait_quantile``).
- **KV transfer**: the prompt's KV cache (``ModelShape.kv_bytes`` of the prompt, stored
  precision) crosses the link between the two replicas: the GPU link inside an NVLink domain,
  otherwise the scale-out NICs. Taken conservatively at one GPU's share of that link (a
  1-GPU replica on either side sends or receives over one GPU's share); the links' latency
  is added once, and a fixed hand-off (``serving.disagg_handoff_ms``: routing, transfer setup,
  the decode worker's admission), fitted on aiconfigurator's disaggregated rows at low load.
- **decode replica**: requests arrive with their cache; ``b = rate x (output - 1) x step(b)``
  sequences decode (Little; the first token came from the prefill replica). TPOT mean is the
  step at that batch; its p99 the step at the batch's 99th percentile (Poisson around the mean:
  arrivals are Poisson, lives nearly fixed). The cache holds ``prompt + output / 2`` tokens per
  sequence on average, as aggregated replicas do.

With a prefix cache (``prefix_cache``) prompts that hit it prefill only what follows the shared
prefix: the prefill queue serves a mixture of hits and misses, and the TTFT p99 takes a miss's
own prefill. Speculative decoding is not offered on disaggregated replicas (the draft's cache
would have to be moved too, or prefilled again on the decode side): a service that allows it
gets speculation on its aggregated replicas only.

Planning capacity of each phase: the largest Poisson rate meeting its target (TTFT for prefill,
TPOT for decode), at most ``serving.headroom`` of its saturation rate, as for aggregated replicas.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner import units as u
from planner.perf.engine import Engine
from planner.perf.inference import engine_for
from planner.perf.inference_types import Footprint, InferenceEstimate, InferenceQuery
from planner.perf.memo import Memo, query_key
from planner.perf.precision import compute_precision, kv_bytes
from planner.perf.queueing import mg1_wait_mean, mg1_wait_quantile, poisson_quantile
from planner.perf.rate_search import largest_within
from planner.perf.replica import Replica
from planner.schema.efficiency import GenerationEfficiency, ServingAssumptions

PHASES = ("prefill", "decode")
KEPT: Memo[InferenceEstimate] = Memo(50_000)  # ``estimate_phase``'s answers: a pure function's


@dataclass(frozen=True)
class KvLink:
    """What a prompt's KV cache crosses from its prefill to its decode replica."""

    kind: str  # nvlink (inside one NVLink domain) | nic (the scale-out fabric)
    gb_per_s_per_gpu: float  # one GPU's share, one way
    latency_us: float


def kv_gb_per_request(q: InferenceQuery, serving: ServingAssumptions) -> float:
    """The prompt's KV cache as it is moved: one copy (not the tensor-parallel replicas)."""
    compute = compute_precision(q.gpu, q.precision)
    assert compute is not None
    return q.model.kv_bytes(q.input_tokens, kv_bytes(q.precision, compute)) / 1e9


def transfer_s(gb: float, link: KvLink, serving: ServingAssumptions) -> float:
    """The KV cache's move to its decode replica, with the hand-off's fixed cost."""
    return serving.disagg_handoff_ms * 1e-3 + link.latency_us * 1e-6 + gb / (link.gb_per_s_per_gpu * serving.link_eff)


def estimate_phase(
    q: InferenceQuery, phase: str, kv_link: KvLink, gen: GenerationEfficiency, serving: ServingAssumptions
) -> InferenceEstimate:
    """One replica of ``q`` serving one phase at the largest Poisson rate meeting its target
    (``q.ttft_ms`` for prefill, ``q.tpot_ms`` for decode), or at ``q.rate`` when given."""
    key = query_key(q, phase, kv_link, gen, serving)
    return KEPT.get(key, lambda: _estimate_phase(q, phase, kv_link, gen, serving))


def _estimate_phase(
    q: InferenceQuery, phase: str, kv_link: KvLink, gen: GenerationEfficiency, serving: ServingAssumptions
) -> InferenceEstimate:
    if phase not in PHASES:
        raise ValueError(f"phase must be one of {PHASES}, not {phase!r}")
    if compute_precision(q.gpu, q.precision) is None:
        return InferenceEstimate(fits=False, reason=f"{q.gpu.id} has no {q.precision} tensor cores")
    engine = engine_for(q, gen, serving)
    r = Replica(q, gen, serving) if engine is not None else None
    if engine is None or r is None:
        return InferenceEstimate(fits=False, reason="weights and one request's KV cache do not fit")
    gb = kv_gb_per_request(q, serving)
    base: Footprint = {
        "weights_gb": r.weights_bytes / 1e9,
        "kv_gb_per_request": r.kv_max / 1e9,
        "factors": {
            "phase": phase,
            "kv_link": kv_link.kind,
            "kv_link_gb_per_s_per_gpu": kv_link.gb_per_s_per_gpu,
            "kv_transfer_gb_per_request": gb,
            "kv_transfer_ms": u.ms(transfer_s(gb, kv_link, serving)),
            "headroom": serving.headroom,
            "generation": q.gpu.generation,
            "attention_dp": q.attention_dp,
        },
    }
    if phase == "prefill":
        return _prefill(q, engine, transfer_s(gb, kv_link, serving), serving, base)
    return _decode(q, engine, r, serving, base)


# --- prefill -------------------------------------------------------------------------------


@dataclass(frozen=True)
class PrefillWork:
    latency_s: float  # one prompt alone, its chunks, plus the per-request overhead
    service_s: float  # a prompt's share of the worker's time when prompts queue (side by side)


@dataclass(frozen=True)
class PrefillMix:
    """Prompts that miss the prefix cache and prompts that hit it (skipping the shared prefix)."""

    miss: PrefillWork
    hit: PrefillWork | None
    hit_rate: float

    @property
    def services(self) -> list[tuple[float, float]]:
        """(share, service seconds) of the queue's customers."""
        if self.hit is None:
            return [(1.0, self.miss.service_s)]
        return [(1 - self.hit_rate, self.miss.service_s), (self.hit_rate, self.hit.service_s)]

    @property
    def mean_service_s(self) -> float:
        return sum(p * s for p, s in self.services)

    @property
    def mean_latency_s(self) -> float:
        if self.hit is None:
            return self.miss.latency_s
        return (1 - self.hit_rate) * self.miss.latency_s + self.hit_rate * self.hit.latency_s


def prefill_mix(engine: Engine, input_tokens: int) -> PrefillMix:
    """The prompts of a prefill-only replica: with a prefix cache, hits prefill only what follows
    the shared prefix (its tokens attend to the cached ones)."""
    miss = prefill_work(engine, input_tokens)
    cached = engine.prefix.cached_tokens(input_tokens) if engine.prefix else 0
    if not cached or engine.prefix is None:
        return PrefillMix(miss, None, 0.0)
    return PrefillMix(miss, prefill_work(engine, input_tokens, cached), engine.prefix.hit_rate)


def prefill_work(engine: Engine, input_tokens: int, cached: int = 0) -> PrefillWork:
    """A prompt on a prefill-only replica: its own latency, and its share of the worker's time
    (``cached``: its first tokens found in the prefix cache, not prefilled)."""
    cost, budget = engine.cost, engine.limits.token_budget
    total = max(1, input_tokens)
    latency, done = 0.0, cached
    while done < total:
        chunk = min(budget, total - done)
        latency += float(cost.iteration_s(0, 0.0, chunk, cost.chunk_pairs(done, chunk)))
        done += chunk
    # prompts that queue are prefilled together: each attention group schedules its own (an
    # attention-DP rank has its own token budget), as many whole prompts as a budget holds
    per_group = max(1, budget // max(1, total - cached))
    side = per_group * cost.attention_dp
    shared, done = 0.0, cached
    while done < total:
        chunk = max(1, min(budget // per_group, total - done))
        pairs = cost.chunk_pairs(done, chunk)
        shared += float(cost.iteration_s(0, 0.0, chunk * side, pairs * side, side))
        done += chunk
    return PrefillWork(latency_s=latency + engine.ttft_overhead_s, service_s=shared / side)


def _prefill(
    q: InferenceQuery, engine: Engine, kv_s: float, serving: ServingAssumptions, base: Footprint
) -> InferenceEstimate:
    work = prefill_mix(engine, q.input_tokens)
    ceiling = 1.0 / work.mean_service_s

    def ttft(rate: float, quantile: float | None) -> float:
        # the p99 adds a miss's own prefill to the wait's p99 (misses are the slow tail)
        if quantile is None:
            return mg1_wait_mean(rate, work.services) + work.mean_latency_s + kv_s
        return mg1_wait_quantile(rate, work.services, quantile) + work.miss.latency_s + kv_s

    target = q.ttft_ms / 1000 if q.ttft_ms is not None else None
    if q.rate is not None:
        rate = q.rate
        if rate >= ceiling:
            return InferenceEstimate(fits=False, reason=f"rate {rate:g}/s is above {ceiling:.3g}/s", **base)
    else:
        alone = work.miss.latency_s + kv_s
        if target is not None and alone > target:
            reason = (
                f"misses TTFT: prefill {u.ms(work.miss.latency_s):.0f} ms + KV transfer {u.ms(kv_s):.1f} ms "
                f"> target {q.ttft_ms:g} ms"
            )
            return InferenceEstimate(fits=False, reason=reason, **base)
        limit = serving.headroom * ceiling
        rate = limit if target is None else largest_within(lambda x: ttft(x, 0.99) / target - 1, limit)
        if rate <= 0:
            return InferenceEstimate(fits=False, reason="misses TTFT at any load", **base)
    return InferenceEstimate(
        fits=True,
        batch=1,
        output_tokens_per_s=0.0,
        ttft_ms=u.ms(ttft(rate, None)),
        ttft_p99_ms=u.ms(ttft(rate, 0.99)),
        requests_per_s=ceiling,
        planning_requests_per_s=rate,
        max_batch_by_memory=1,
        bound="compute",
        **base,
    )


# --- decode --------------------------------------------------------------------------------


class DecodeLoad:
    """A decode-only replica: sequences arrive with their prompt's cache and generate."""

    def __init__(self, engine: Engine, input_tokens: int, output_tokens: int) -> None:
        self.cost = engine.cost
        self.steps = max(0, output_tokens - 1)  # the first token came with the prefill
        self.context = input_tokens + output_tokens / 2
        by_cache = int(engine.limits.kv_capacity_tokens // self.context)
        # each attention-DP rank schedules its own sequences (up to the engine's limit each)
        self.max_running = max(0, min(engine.limits.max_seqs * engine.cost.attention_dp, by_cache))

    def step_s(self, batch: float) -> float:
        return float(self.cost.iteration_s(max(1, math.ceil(batch)), max(1.0, batch) * self.context))

    def ceiling(self) -> float:
        b = self.max_running
        return b / (self.steps * self.step_s(b)) if b and self.steps else 0.0

    def batch(self, rate: float) -> float | None:
        """The mean number decoding at ``rate`` (Little), None when it needs more than fit."""
        top = float(self.max_running)
        if rate * self.steps * self.step_s(top) >= top:
            return None
        lo, hi = 0.0, top  # b - rate x steps x step(b) rises from below 0 to above 0
        for _ in range(60):
            mid = (lo + hi) / 2
            if mid < rate * self.steps * self.step_s(mid):
                lo = mid
            else:
                hi = mid
        return hi

    def tpot_p99_s(self, batch: float) -> float:
        return self.step_s(min(float(self.max_running), poisson_quantile(batch, 0.99)))


def _decode(
    q: InferenceQuery, engine: Engine, r: Replica, serving: ServingAssumptions, base: Footprint
) -> InferenceEstimate:
    load = DecodeLoad(engine, q.input_tokens, q.output_tokens)
    if load.steps == 0:
        return InferenceEstimate(fits=False, reason="one output token: nothing to decode", **base)
    if load.max_running < 1:
        return InferenceEstimate(fits=False, reason="no sequence's KV cache fits beside the weights", **base)
    ceiling = load.ceiling()
    target = q.tpot_ms / 1000 if q.tpot_ms is not None else None

    def margin(rate: float) -> float:
        b = load.batch(rate)
        if b is None:
            return math.inf
        return load.tpot_p99_s(b) / target - 1 if target is not None else -1.0

    if q.rate is not None:
        rate = q.rate
    else:
        if target is not None and load.step_s(1) > target:
            reason = f"misses TPOT: {u.ms(load.step_s(1)):.1f} ms at batch 1 > target {q.tpot_ms:g} ms"
            return InferenceEstimate(fits=False, reason=reason, **base)
        rate = largest_within(margin, serving.headroom * ceiling)
    batch = load.batch(rate) if rate > 0 else None
    if batch is None:
        return InferenceEstimate(fits=False, reason="misses TPOT at any load", **base)
    return InferenceEstimate(
        fits=True,
        batch=max(1, round(batch)),
        output_tokens_per_s=rate * q.output_tokens,
        output_tokens_per_s_per_gpu=rate * q.output_tokens / q.gpus,
        tpot_ms=u.ms(load.step_s(batch)),
        tpot_p99_ms=u.ms(load.tpot_p99_s(batch)),
        requests_per_s=ceiling,
        planning_requests_per_s=rate,
        max_batch_by_memory=load.max_running,
        bound=r.step_s(max(1, round(batch)))[1],
        **base,
    )
