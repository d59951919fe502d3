"""One replica's static model: weights and KV in memory, the decode step, prefill, TTFT/TPOT at a
steady batch (the formulas of ``planner.perf.inference``'s description). ``inference`` turns it
into an estimate under load; ``engine`` and ``disagg`` read its figures."""

from __future__ import annotations

from planner.perf.inference_types import InferenceQuery, weights_of
from planner.perf.precision import compute_precision, kv_bytes
from planner.schema.efficiency import GenerationEfficiency, ServingAssumptions


class Replica:
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
