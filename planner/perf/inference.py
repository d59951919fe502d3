"""Inference per replica: memory fit, decode step, prefill, TTFT/TPOT, throughput.

The model (see shared/design/modelling.md):

- weights ``W = params * bytes`` (never more bytes than the checkpoint is published in:
  gpt-oss's experts stay MXFP4, DeepSeek stays FP8); every expert is held in memory;
- KV per token follows the attention (``2 * layers * kv_heads * head_dim`` for GQA,
  ``layers * (kv_lora_rank + qk_rope_head_dim)`` for MLA); sliding-window layers hold at
  most their window; KV heads fewer than the TP degree (and MLA's latent) are replicated;
- a replica of ``t`` GPUs fits ``B`` sequences when ``W + B * kv(ctx) <= t * usable``;
- a decode step reads the weights it needs (for MoE: the non-expert weights plus the
  experts the batch's tokens are routed to, ``1 - (1 - k/E)^B`` of them per layer) and
  every sequence's KV once, or is limited by FLOPs (active parameters plus attention),
  whichever is slower, plus two all-reduces per layer over the in-server link when ``t > 1``
  (with attention data parallelism: all-reduces inside each attention group, and an
  all-to-all to and from the experts' GPUs on MoE layers);
- continuous batching: each step also prefills the requests that replace the
  ones that finished (``B / output_tokens`` per step), so TPOT and throughput
  both include the prefill work.
"""

from __future__ import annotations

import math

from planner import units as u
from planner.perf.engine import Engine, EngineLimits, IterationCost
from planner.perf.inference_types import Footprint, InferenceEstimate, InferenceQuery
from planner.perf.load import Latency, Load
from planner.perf.memo import Memo, query_key
from planner.perf.precision import compute_precision
from planner.perf.replica import Replica
from planner.schema.efficiency import GenerationEfficiency, ServingAssumptions

KEPT: Memo[InferenceEstimate] = Memo(50_000)
WITHIN: Memo[bool] = Memo(50_000)  # ``plans_within``'s answers


def estimate_inference(q: InferenceQuery, gen: GenerationEfficiency, serving: ServingAssumptions) -> InferenceEstimate:
    """What one replica of ``q`` does (a pure function of its arguments: the answers of this
    process are kept, so what-if variants, explanation re-solves and repeated plans of the same
    problem do not estimate the same replica again)."""
    return KEPT.get(query_key(q, gen, serving), lambda: _estimate(q, gen, serving))


def plans_within(q: InferenceQuery, gen: GenerationEfficiency, serving: ServingAssumptions, rps: float) -> bool:
    """True when ``estimate_inference(q)`` fits and sizes ``q`` by the largest rate meeting its
    latency targets, and that rate cannot exceed ``rps`` (``Load.max_rate_within``). A caller
    that already has ``rps`` elsewhere learns as much as from the estimate, for at most one
    steady state instead of a search's dozen."""
    return WITHIN.get(query_key(q, gen, serving, rps), lambda: _plans_within(q, gen, serving, rps))


def _plans_within(q: InferenceQuery, gen: GenerationEfficiency, serving: ServingAssumptions, rps: float) -> bool:
    if q.concurrency is not None or q.steady_batch or q.clients is not None or q.rate is not None:
        return False
    if compute_precision(q.gpu, q.precision) is None or q.attention_dp < 1 or q.gpus % q.attention_dp:
        return False
    if min(Replica(q, gen, serving).max_batch_by_memory(), serving.max_batch) < 1:
        return False
    engine = engine_for(q, gen, serving)
    if engine is None:
        return False
    load = Load(engine, q.input_tokens, q.output_tokens)
    return load.max_rate_within(*_targets_s(q), serving.headroom, rps)


def _targets_s(q: InferenceQuery) -> tuple[float | None, float | None]:
    """The query's TTFT and TPOT targets (p99), in seconds."""
    return (None if q.ttft_ms is None else q.ttft_ms / 1000, None if q.tpot_ms is None else q.tpot_ms / 1000)


def _estimate(q: InferenceQuery, gen: GenerationEfficiency, serving: ServingAssumptions) -> InferenceEstimate:
    compute = compute_precision(q.gpu, q.precision)
    if compute is None:
        return InferenceEstimate(fits=False, reason=f"{q.gpu.id} has no {q.precision} tensor cores")
    if q.attention_dp < 1 or q.gpus % q.attention_dp:
        return InferenceEstimate(fits=False, reason=f"attention_dp {q.attention_dp} must divide {q.gpus} GPUs")
    r = Replica(q, gen, serving)
    base: Footprint = {
        "weights_gb": r.weights_bytes / 1e9,
        "kv_gb_per_request": r.kv_max / 1e9,
        "factors": _factors(r),
    }
    by_memory = min(r.max_batch_by_memory(), serving.max_batch)
    if by_memory < 1:
        need = (r.weights_bytes + r.shared_prefix_bytes + r.kv_max) / 1e9
        return InferenceEstimate(
            fits=False,
            reason=(
                f"needs {need:.1f} GB for weights and one request's KV cache; "
                f"{q.gpus} x {q.gpu.id} offer {r.usable_bytes / 1e9:.1f} GB usable"
            ),
            **base,
        )
    if q.concurrency is None and not q.steady_batch and (q.clients is None or not _serving_options(q)):
        return _under_load(q, r, serving, by_memory, base)
    if _serving_options(q):
        reason = f"{_serving_options(q)} is modelled under Poisson load (a rate or latency targets) only"
        return InferenceEstimate(fits=False, reason=reason, max_batch_by_memory=by_memory, **base)
    batch, reason = _choose_batch(r, q, by_memory)
    if batch < 1:
        return InferenceEstimate(fits=False, reason=reason, max_batch_by_memory=by_memory, **base)
    it = r.iteration_s(batch)
    rps = batch / q.output_tokens / it
    return InferenceEstimate(
        fits=True,
        batch=batch,
        output_tokens_per_s=batch / it,
        output_tokens_per_s_per_gpu=batch / it / q.gpus,
        ttft_ms=u.ms(r.ttft_s(batch)),
        tpot_ms=u.ms(it),
        ttft_p99_ms=u.ms(r.ttft_p99_s(batch)),
        tpot_p99_ms=u.ms(r.tpot_p99_s(batch)),
        requests_per_s=rps,
        planning_requests_per_s=rps * serving.headroom,
        max_batch_by_memory=by_memory,
        bound=r.step_s(batch)[1],
        **base,
    )


def _under_load(
    q: InferenceQuery, r: Replica, serving: ServingAssumptions, by_memory: int, base: Footprint
) -> InferenceEstimate:
    """A closed loop of clients, Poisson arrivals at a rate, or (neither) the largest Poisson
    rate whose p99 latencies meet the targets: what the optimiser plans on."""
    engine = engine_for(q, r.gen, serving)
    assert engine is not None  # the caller checked that one request fits
    low = serving.closed_loop_length_low
    if q.clients is not None:
        if q.clients > by_memory:
            reason = f"concurrency {q.clients} needs more KV cache than fits (at most {by_memory})"
            return InferenceEstimate(fits=False, reason=reason, max_batch_by_memory=by_memory, **base)
        spread = (1 + low) / 2  # the benchmark's lengths are uniform in [low x L, L]
        load = Load(engine, q.input_tokens * spread, q.output_tokens * spread)
        lat = load.closed_loop(q.clients, serving.closed_loop_waves, low)
        return _from_latency(q, r, lat, load.saturation_rate(), lat.requests_per_s, by_memory, base)
    load = Load(engine, q.input_tokens, q.output_tokens)
    ceiling = load.saturation_rate()
    if q.rate is not None:
        lat = load.poisson(q.rate)
        if not lat.stable:
            reason = f"rate {q.rate:g}/s is above what one replica serves ({ceiling:.3g}/s)"
            return InferenceEstimate(fits=False, reason=reason, max_batch_by_memory=by_memory, **base)
        return _from_latency(q, r, lat, ceiling, q.rate, by_memory, base)
    rate = load.max_rate(*_targets_s(q), serving.headroom)
    if rate <= 0:
        return InferenceEstimate(fits=False, reason=_missed(load, q), max_batch_by_memory=by_memory, **base)
    return _from_latency(q, r, load.poisson(rate), ceiling, rate, by_memory, base)


def _missed(load: Load, q: InferenceQuery) -> str:
    """Why no load meets the targets: the latencies of one request alone."""
    alone = load.poisson(load.saturation_rate() * 1e-6)
    if q.tpot_ms is not None and u.ms(alone.tpot_p99_s) > q.tpot_ms:
        return f"misses TPOT: {u.ms(alone.tpot_p99_s):.1f} ms at the lightest load > target {q.tpot_ms:g} ms"
    return f"misses TTFT: {u.ms(alone.ttft_p99_s):.0f} ms at the lightest load > target {q.ttft_ms:g} ms"


def _from_latency(
    q: InferenceQuery,
    r: Replica,
    lat: Latency,
    ceiling_rps: float,
    planned_rps: float,
    by_memory: int,
    base: Footprint,
) -> InferenceEstimate:
    batch = max(1, round(lat.batch))
    tokens_per_s = planned_rps * q.output_tokens
    return InferenceEstimate(
        fits=True,
        batch=batch,
        output_tokens_per_s=tokens_per_s,
        output_tokens_per_s_per_gpu=tokens_per_s / q.gpus,
        ttft_ms=u.ms(lat.ttft_s),
        tpot_ms=u.ms(lat.tpot_s),
        ttft_p99_ms=u.ms(lat.ttft_p99_s),
        tpot_p99_ms=u.ms(lat.tpot_p99_s),
        requests_per_s=ceiling_rps,
        planning_requests_per_s=planned_rps,
        max_batch_by_memory=by_memory,
        bound=r.step_s(batch)[1],
        **base,
    )


def _choose_batch(r: Replica, q: InferenceQuery, by_memory: int) -> tuple[int, str]:
    """The concurrency asked for, else the largest batch meeting the latency targets (as p99)."""
    if q.concurrency is not None:
        if q.concurrency > by_memory:
            return 0, f"concurrency {q.concurrency} needs more KV cache than fits (at most {by_memory})"
        return q.concurrency, ""

    def ok(b: int) -> bool:
        if q.tpot_ms is not None and u.ms(r.tpot_p99_s(b)) > q.tpot_ms:
            return False
        return not (q.ttft_ms is not None and u.ms(r.ttft_p99_s(b)) > q.ttft_ms)

    if not ok(1):
        tpot1, ttft1 = u.ms(r.tpot_p99_s(1)), u.ms(r.ttft_p99_s(1))
        if q.tpot_ms is not None and tpot1 > q.tpot_ms:
            return 0, f"misses TPOT: {tpot1:.1f} ms at batch 1 > target {q.tpot_ms:g} ms"
        return 0, f"misses TTFT: {ttft1:.0f} ms at batch 1 > target {q.ttft_ms:g} ms"
    lo, hi = 1, by_memory  # latency grows with batch: binary search the largest that passes
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo, ""


def _serving_options(q: InferenceQuery) -> str:
    """The serving options the query asks for (prefix caching, speculation), named; "" for none."""
    names = (["a prefix cache"] if q.prefix else []) + (["speculative decoding"] if q.speculation else [])
    return " and ".join(names)


def _option_factors(r: Replica) -> dict[str, float | str]:
    """What was assumed about prefix caching and speculation (nothing when neither is used)."""
    out: dict[str, float | str] = {}
    if r.q.prefix:
        out["prefix_hit_rate"] = r.hit_rate
        out["prefix_shared_tokens"] = r.cached_tokens
        out["prefix_kv_gb"] = r.shared_prefix_bytes / 1e9
    spec = r.q.speculation
    if spec:
        out["speculation"] = spec.label
        out["speculation_draft_params_b"] = spec.draft.params_b
        out["speculation_tokens"] = spec.tokens
        out["speculation_acceptance_rate"] = spec.acceptance_rate
        out["speculation_tokens_per_step"] = spec.tokens_per_step
    return out


def _factors(r: Replica) -> dict[str, float | str]:
    return _option_factors(r) | {
        "generation": r.q.gpu.generation,
        "calibrated": "yes" if r.gen.calibrated else "no: no published measurements for this generation",
        "compute_precision": r.compute,
        "bandwidth_eff": r.gen.bandwidth_eff,
        "compute_eff": r.compute_eff,
        "ttft_queue_iterations": r.s.ttft_queue_iterations,
        "ttft_p99_factor": r.s.ttft_p99_factor,
        "tpot_p99_factor": r.s.tpot_p99_factor,
        "memory_reserve_fraction": r.s.memory_reserve_fraction,
        "headroom": r.s.headroom,
        "link": r.q.link.kind,
        "link_gb_per_s": r.q.link.gb_per_s_one_way,
        "attention_dp": r.dp,
        "kv_replicas": r.q.model.kv_replicas(r.attn_tp),
    }


def max_tp_candidates(gpus_per_server: int) -> list[int]:
    """Tensor-parallel degrees within one server: powers of two that divide it."""
    out, t = [], 1
    while t <= gpus_per_server:
        if gpus_per_server % t == 0:
            out.append(t)
        t *= 2
    return out


def is_power_of_two(n: int) -> bool:
    return n > 0 and math.log2(n).is_integer()


def engine_for(q: InferenceQuery, gen: GenerationEfficiency, serving: ServingAssumptions) -> Engine | None:
    """The replica's iteration cost and scheduler limits; None when no request fits."""
    if compute_precision(q.gpu, q.precision) is None or q.attention_dp < 1 or q.gpus % q.attention_dp:
        return None
    r = Replica(q, gen, serving)
    spare = r.kv_spare_bytes()
    if spare < r.kv_max:
        return None
    # sliding windows cap a sequence's cache: count tokens at the shape's mean bytes per token
    bytes_per_token = r.kv_avg / r.ctx_avg if r.ctx_avg > 0 else r.kv_per_token
    limits = EngineLimits(
        token_budget=serving.token_budget,
        max_seqs=serving.max_batch,
        kv_capacity_tokens=int(spare // bytes_per_token),
    )
    return Engine(
        cost=IterationCost(r), limits=limits, ttft_overhead_s=serving.ttft_overhead_ms * 1e-3, prefix=q.prefix
    )
