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
from planner.perf.inference_types import Footprint, InferenceEstimate, InferenceQuery, weights_of
from planner.perf.load import Latency, Load
from planner.perf.memo import Memo, query_key
from planner.perf.precision import compute_precision, kv_bytes
from planner.schema.efficiency import GenerationEfficiency, ServingAssumptions


class _Replica:
    """Precomputed constants for one (model, GPU, TP, precision) replica; times in seconds."""

    def __init__(self, q: InferenceQuery, gen: GenerationEfficiency, s: ServingAssumptions) -> None:
        self.q, self.gen, self.s = q, gen, s
        compute = compute_precision(q.gpu, q.precision)
        assert compute is not None
        self.compute = compute
        m, t = q.model, q.gpus
        self.dp = q.attention_dp
        self.attn_tp = t // self.dp  # GPUs sharing one sequence's attention
        self.weights = weights_of(m, q.precision, s.int4_overhead, dense_copies=self.dp)
        spec = q.speculation
        # a draft model (or MTP module) sits beside the target, tensor-parallel over all the GPUs
        self.draft_weights = weights_of(spec.draft, q.precision, s.int4_overhead) if spec else None
        draft_bytes = self.draft_weights.total if self.draft_weights else 0.0
        self.weights_bytes = self.weights.total + draft_bytes  # all experts are held, whichever are read
        self.ctx_avg = q.input_tokens + q.output_tokens / 2  # paged KV: mean occupancy
        self.ctx_max = q.input_tokens + q.output_tokens
        kv_value, replicas = kv_bytes(q.precision, compute), m.kv_replicas(self.attn_tp)
        self.draft_kv_per_token = spec.draft.kv_bytes_per_token(kv_value) * spec.draft.kv_replicas(t) if spec else 0.0

        def kv_of(context: float) -> float:  # one sequence, all GPUs, the draft's cache included
            draft = spec.draft.kv_bytes(context, kv_value) * spec.draft.kv_replicas(t) if spec else 0.0
            return m.kv_bytes(context, kv_value) * replicas + draft

        self.kv_avg = kv_of(self.ctx_avg)
        self.kv_max = kv_of(self.ctx_max)
        self.kv_per_token = m.kv_bytes_per_token(kv_value) * replicas
        # a prefix cache holds one copy of the shared prefix; a hit's own cache skips those blocks
        self.hit_rate = q.prefix.hit_rate if q.prefix else 0.0
        self.cached_tokens = q.prefix.cached_tokens(q.input_tokens) if q.prefix else 0
        self.shared_prefix_bytes = kv_of(self.cached_tokens) if self.cached_tokens else 0.0
        self.kv_own_avg = self.kv_avg - self.hit_rate * self.shared_prefix_bytes
        self.usable_bytes = t * q.gpu.memory_gb * 1e9 * (1 - s.memory_reserve_fraction)
        self.bw = t * q.gpu.memory_bandwidth_gb_per_s * 1e9 * gen.bandwidth_eff
        self.compute_eff = gen.compute_eff_for(compute)
        self.flops = t * q.gpu.tflops_dense[compute] * 1e12 * self.compute_eff
        self.prefill_eff = gen.moe_prefill_eff if m.experts > 1 else 1.0
        self.hidden = m.hidden_size

    def max_batch_by_memory(self) -> int:
        spare = self.kv_spare_bytes()
        if spare < self.kv_max:
            return 0
        return int(spare // self.kv_own_avg)

    def kv_spare_bytes(self) -> float:
        """Memory left for the sequences' own KV caches: beside the weights and the shared prefix."""
        return self.usable_bytes - self.weights_bytes - self.shared_prefix_bytes

    def comm_s(self, tokens: float) -> float:
        return self._allreduce_s(tokens)

    def _allreduce_s(self, tokens: float) -> float:
        """Time on the in-server link per pass over ``tokens`` tokens (the whole replica's)."""
        t = self.q.gpus
        if t == 1:
            return 0.0
        if self.dp > 1:
            return self._data_parallel_comm_s(tokens)
        lat = self.s.link_latency_us.get(self.q.link.kind, 25.0) * 1e-6
        msg = 2 * (t - 1) / t * tokens * self.hidden * 2  # ring all-reduce of 16-bit activations
        per_layer = 2 * (lat + msg / (self.q.link.gb_per_s_one_way * 1e9 * self.s.link_eff))
        return self.q.model.layers * per_layer

    def _transfer_s(self, nbytes: float) -> float:
        lat = self.s.link_latency_us.get(self.q.link.kind, 25.0) * 1e-6
        return lat + nbytes / (self.q.link.gb_per_s_one_way * 1e9 * self.s.link_eff)

    def _data_parallel_comm_s(self, tokens: float) -> float:
        """Attention data parallelism: all-reduces inside each attention group (on its share of
        the tokens, groups in parallel), and on MoE layers an all-to-all that sends each token
        to its ``k`` experts' GPUs and the results back (the part leaving each GPU)."""
        m, t, a = self.q.model, self.q.gpus, self.attn_tp
        moe_layers = min(m.layers, m.moe_layer_count()) if self.weights.experts else 0
        per_group = tokens / self.dp
        allreduce = self._transfer_s(2 * (a - 1) / a * per_group * self.hidden * 2) if a > 1 else 0.0
        moe_layer = 0.0
        if moe_layers:
            sent = tokens / t * m.experts_per_token * self.hidden * 2 * (t - 1) / t  # 16-bit activations
            moe_layer = 2 * self._transfer_s(sent)  # dispatch and combine
        # attention's all-reduce on every layer; dense layers add the MLP's, MoE layers the all-to-all
        return m.layers * allreduce + (m.layers - moe_layers) * allreduce + moe_layers * moe_layer

    def step_s(self, batch: int) -> tuple[float, str]:
        m = self.q.model
        mem = (self.weights.read(batch) + batch * self.kv_avg) / self.bw
        attn = m.attention_flops_per_pair(decode=True) * m.attended(self.ctx_avg) * batch
        comp = (2 * m.active_params_b * 1e9 * batch + attn) / self.flops
        overhead = self.s.step_overhead_ms * 1e-3
        return max(mem, comp) + self._allreduce_s(batch) + overhead, "memory" if mem >= comp else "compute"

    def prefill_compute_s(self, linear_flops: float, attention_flops: float, tokens: float, prompts: int = 1) -> float:
        """Compute time of prefilling ``tokens`` prompt tokens of ``prompts`` prompts."""
        flops = linear_flops + attention_flops
        if self.dp <= 1:
            return flops / self.flops / self.prefill_eff
        # a prompt runs its attention and dense layers on its own group (1/dp of the GPUs);
        # only its routed experts' work is spread over the whole replica
        experts = 2 * self.q.model.routed_active_params_b() * 1e9 * tokens
        groups_idle = self.dp / min(self.dp, max(1, prompts))
        return ((flops - experts) * groups_idle + experts) / self.flops / self.prefill_eff

    def prefill_s(self) -> float:
        m, n = self.q.model, self.q.input_tokens
        linear = 2 * m.active_params_b * 1e9 * n
        attention = m.attention_flops_per_pair(decode=False) * m.causal_pairs(n)
        compute_s = self.prefill_compute_s(linear, attention, n)
        return max(compute_s, self.weights.read(n) / self.bw) + self._allreduce_s(n)

    def prefill_latency_s(self) -> float:
        """A prompt's own prefill pass, with the per-layer fixed cost that batched
        prefills inside an iteration share (so throughput does not pay it per request)."""
        return self.prefill_s() + self.q.model.layers * self.s.prefill_overhead_us_per_layer * 1e-6

    def iteration_s(self, batch: int) -> float:
        # Each step admits batch/output new requests; their prefill shares the step.
        return self.step_s(batch)[0] + batch / self.q.output_tokens * self.prefill_s()

    def _queue_s(self, batch: int) -> float:
        """Mean wait before a new request's prefill: the other sequences' iterations.

        A request arriving at a busy replica waits for the running iteration and is
        prefilled inside the next one (``ttft_queue_iterations``, fitted to MLPerf
        Server); alone on the replica (batch 1) it waits for nothing.
        """
        others = (batch - 1) / batch
        own_share = self.prefill_s() / self.q.output_tokens
        return self.s.ttft_queue_iterations * (self.iteration_s(batch) - own_share) * others

    def ttft_s(self, batch: int) -> float:
        return self.prefill_latency_s() + self._queue_s(batch)

    def ttft_p99_s(self, batch: int) -> float:
        return self.prefill_latency_s() + self.s.ttft_p99_factor * self._queue_s(batch)

    def tpot_p99_s(self, batch: int) -> float:
        # step times vary with the prefill mixed into them; a lone sequence does not
        spread = (self.s.tpot_p99_factor - 1) * (batch - 1) / batch
        return self.iteration_s(batch) * (1 + spread)


KEPT: Memo[InferenceEstimate] = Memo(50_000)


def estimate_inference(q: InferenceQuery, gen: GenerationEfficiency, serving: ServingAssumptions) -> InferenceEstimate:
    """What one replica of ``q`` does (a pure function of its arguments: the answers of this
    process are kept, so what-if variants, explanation re-solves and repeated plans of the same
    problem do not estimate the same replica again)."""
    return KEPT.get(query_key(q, gen, serving), lambda: _estimate(q, gen, serving))


def _estimate(q: InferenceQuery, gen: GenerationEfficiency, serving: ServingAssumptions) -> InferenceEstimate:
    compute = compute_precision(q.gpu, q.precision)
    if compute is None:
        return InferenceEstimate(fits=False, reason=f"{q.gpu.id} has no {q.precision} tensor cores")
    if q.attention_dp < 1 or q.gpus % q.attention_dp:
        return InferenceEstimate(fits=False, reason=f"attention_dp {q.attention_dp} must divide {q.gpus} GPUs")
    r = _Replica(q, gen, serving)
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
    q: InferenceQuery, r: _Replica, serving: ServingAssumptions, by_memory: int, base: Footprint
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
    ttft_s = None if q.ttft_ms is None else q.ttft_ms / 1000
    tpot_s = None if q.tpot_ms is None else q.tpot_ms / 1000
    rate = load.max_rate(ttft_s, tpot_s, serving.headroom)
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
    r: _Replica,
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


def _choose_batch(r: _Replica, q: InferenceQuery, by_memory: int) -> tuple[int, str]:
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


def _option_factors(r: _Replica) -> dict[str, float | str]:
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


def _factors(r: _Replica) -> dict[str, float | str]:
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
    r = _Replica(q, gen, serving)
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
