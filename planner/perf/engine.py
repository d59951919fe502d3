"""One engine iteration of a serving replica: the per-step cost shared by every latency figure.

A continuous-batching engine (vLLM, SGLang, TensorRT-LLM) runs iterations. In each, every
running sequence past its prompt decodes one token, and prompt chunks of other sequences
are prefilled in the token budget left (chunked prefill). One iteration costs:

- the decode part: the weights it needs and every decoding sequence's KV cache read once,
  or its FLOPs (active parameters plus attention), whichever is slower;
- the prefill part: the prompt chunks' FLOPs (linear layers plus causal attention); when no
  sequence decodes, at least the weights the chunk's tokens need read once;
- the in-server link: the all-reduces (or attention-DP all-to-alls) on all tokens;
- fixed costs: the step (scheduling, launches) and, when a prompt is prefilled, per layer.

The analytic latency models (``planner.perf.load``) and the simulator
(``planner.simulate``) both price iterations with this class, so they disagree only in how
they schedule requests, never in what a step costs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from planner.perf.inference import _Replica

Seconds = float | np.ndarray


@dataclass(frozen=True)
class EngineLimits:
    token_budget: int  # tokens (decode tokens + prompt chunks) one iteration processes at most
    max_seqs: int  # sequences a replica runs at once
    kv_capacity_tokens: int  # KV-cache tokens the replica holds over all its sequences


class IterationCost:
    """Seconds of one iteration of one replica; see the module docstring."""

    def __init__(self, r: _Replica) -> None:
        m, s = r.q.model, r.s
        self._r = r
        self._model = m
        moe_layers = m.moe_layer_count() if r.weights.experts else 0
        self._kv_per_token = r.kv_per_token  # bytes, all the replica's GPUs
        self._decode_pair_flops = m.attention_flops_per_pair(decode=True)
        self._prefill_pair_flops = m.attention_flops_per_pair(decode=False)
        self._active_flops = 2 * m.active_params_b * 1e9
        self._step_s = s.step_overhead_ms * 1e-3 + moe_layers * s.moe_layer_overhead_us * 1e-6
        self._prefill_fixed_s = (
            m.layers * s.prefill_overhead_us_per_layer + moe_layers * s.moe_prefill_overhead_us_per_layer
        ) * 1e-6
        window = m.sliding_window
        self._window = window
        self._full_layers = m.layers if window is None else (m.full_attention_layers or 0)

    @property
    def prefill_fixed_s(self) -> float:
        """What an iteration pays once when it prefills anything, however many prompts."""
        return self._prefill_fixed_s

    def _attended(self, context: Seconds) -> Seconds:
        """Cached tokens one new token attends to, summed over layers (windows capped)."""
        m = self._model
        if self._window is None:
            return m.layers * context
        return self._full_layers * context + (m.layers - self._full_layers) * np.minimum(context, self._window)

    def decode_s(self, seqs: int, context_tokens: Seconds) -> Seconds:
        """The decode part: ``seqs`` sequences holding ``context_tokens`` tokens between them."""
        if seqs <= 0:
            return 0.0 * context_tokens
        r = self._r
        per_seq = context_tokens / seqs
        kv = seqs * self._kv_bytes(per_seq)
        mem = (r.weights.read(seqs) + kv) / r.bw
        flops = self._active_flops * seqs + self._decode_pair_flops * seqs * self._attended(per_seq)
        return np.maximum(mem, flops / r.flops)

    def _kv_bytes(self, context: Seconds) -> Seconds:
        if self._window is None:
            return context * self._kv_per_token
        return self._kv_per_token / self._model.layers * self._attended(context)

    @property
    def attention_dp(self) -> int:
        """Attention data-parallel groups: prompts on different groups prefill side by side."""
        return self._r.dp

    def prefill_s(self, tokens: int, pairs: float, alone: bool, prompts: int = 1) -> float:
        """The prefill part: ``tokens`` prompt tokens with ``pairs`` attention pairs.

        ``alone``: no sequence decodes in the iteration, so the weights are read for the
        prompt's sake (a lone short prompt is bandwidth-bound like a decode step)."""
        if tokens <= 0:
            return 0.0
        r = self._r
        compute = r.prefill_compute_s(self._active_flops * tokens, self._prefill_pair_flops * pairs, tokens, prompts)
        if not alone:
            return compute
        return max(compute, r.weights.read(tokens) / r.bw)

    def iteration_s(
        self,
        decode_seqs: int,
        context_tokens: Seconds,
        prefill_tokens: int = 0,
        prefill_pairs: float = 0.0,
        prefill_prompts: int = 1,
    ) -> Seconds:
        """One iteration; ``context_tokens`` may be an array (decode-only stretches).
        ``prefill_prompts``: how many prompts the prefill tokens belong to (with attention data
        parallelism, prompts on different groups run side by side)."""
        r = self._r
        fixed = self._step_s + (self._prefill_fixed_s if prefill_tokens > 0 else 0.0)
        link = r.comm_s(decode_seqs + prefill_tokens)
        pre = self.prefill_s(prefill_tokens, prefill_pairs, alone=decode_seqs <= 0, prompts=prefill_prompts)
        return self.decode_s(decode_seqs, context_tokens) + pre + link + fixed

    def chunk_pairs(self, done_tokens: int, chunk_tokens: int) -> float:
        """Attention (query, key) pairs, all layers, of prefilling tokens
        ``[done, done + chunk)`` of one prompt (each attends to all before it)."""
        m = self._model
        return m.causal_pairs(done_tokens + chunk_tokens) - m.causal_pairs(done_tokens)


@dataclass(frozen=True)
class Engine:
    cost: IterationCost
    limits: EngineLimits
    ttft_overhead_s: float = 0.0  # per request, outside the engine's iterations
