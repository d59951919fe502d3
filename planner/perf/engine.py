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

With speculative decoding (``planner.perf.speculation``) the decode part is one speculative
step: ``k`` draft decode passes (the draft's weights and KV read each pass) and one target
pass verifying ``k + 1`` tokens per sequence (the weights read once, compute and the
all-reduces for ``k + 1`` tokens); a step yields ``tokens_per_step`` tokens per sequence on
average. The draft also prefills every prompt beside the target.

The analytic latency models (``planner.perf.load``) and the simulator
(``planner.simulate``) both price iterations with this class, so they disagree only in how
they schedule requests, never in what a step costs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from planner.perf.replica import Replica
    from planner.perf.speculation import PrefixCache

Seconds = float | np.ndarray


def _maximum(a: Seconds, b: Seconds) -> Seconds:
    """``np.maximum``, but a plain float for two floats: the analytic models price scalars by the
    hundred thousand, where numpy's scalar dispatch costs more than the arithmetic."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.maximum(a, b)
    return a if a >= b else b


def _minimum(a: Seconds, b: float) -> Seconds:
    return np.minimum(a, b) if isinstance(a, np.ndarray) else (a if a <= b else b)


@dataclass(frozen=True)
class EngineLimits:
    token_budget: int  # tokens (decode tokens + prompt chunks) one iteration processes at most
    max_seqs: int  # sequences a replica runs at once
    kv_capacity_tokens: int  # KV-cache tokens the replica holds over all its sequences


class IterationCost:
    """Seconds of one iteration of one replica; see the module docstring."""

    def __init__(self, r: Replica) -> None:
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
        spec = r.q.speculation
        self._k = spec.tokens if spec else 0  # tokens the draft proposes per step
        self.tokens_per_step = spec.tokens_per_step if spec else 1.0
        if spec is not None:
            d = spec.draft
            self._draft = d
            self._draft_active_flops = 2 * d.active_params_b * 1e9
            self._draft_decode_pair_flops = d.attention_flops_per_pair(decode=True)
            self._draft_prefill_pair_flops = d.attention_flops_per_pair(decode=False)
            self._draft_layer_share = d.layers / m.layers  # its all-reduces and attention pairs per target's

    @property
    def prefill_fixed_s(self) -> float:
        """What an iteration pays once when it prefills anything, however many prompts."""
        return self._prefill_fixed_s

    def _attended(self, context: Seconds) -> Seconds:
        """Cached tokens one new token attends to, summed over layers (windows capped)."""
        m = self._model
        if self._window is None:
            return m.layers * context
        return self._full_layers * context + (m.layers - self._full_layers) * _minimum(context, self._window)

    def decode_s(self, seqs: int, context_tokens: Seconds) -> Seconds:
        """The decode part: ``seqs`` sequences holding ``context_tokens`` tokens between them."""
        if seqs <= 0:
            return 0.0 * context_tokens
        r = self._r
        per_seq = context_tokens / seqs
        kv = seqs * self._kv_bytes(per_seq)
        tokens = seqs * (self._k + 1)  # the target verifies k proposed tokens and adds one
        mem = (r.weights.read(tokens) + kv) / r.bw
        flops = self._active_flops * tokens + self._decode_pair_flops * tokens * self._attended(per_seq)
        target = _maximum(mem, flops / r.flops)
        if not self._k:
            return target
        return target + self._k * self._draft_pass_s(seqs, per_seq)

    def _draft_pass_s(self, seqs: int, per_seq: Seconds) -> Seconds:
        """One draft decode pass over ``seqs`` sequences of ``per_seq`` context tokens each."""
        r, d = self._r, self._draft
        assert r.draft_weights is not None
        if d.sliding_window is None:
            attended = d.layers * per_seq
        else:
            full = d.full_attention_layers or 0
            attended = full * per_seq + (d.layers - full) * _minimum(per_seq, d.sliding_window)
        kv = seqs * r.draft_kv_per_token / d.layers * attended
        mem = (r.draft_weights.read(seqs) + kv) / r.bw
        flops = self._draft_active_flops * seqs + self._draft_decode_pair_flops * seqs * attended
        return _maximum(mem, flops / r.flops)

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
        weights = r.weights.read(tokens)
        if self._k:  # the draft prefills the prompt too (its pairs: the target's per layer, on its layers)
            draft_pairs = self._draft_prefill_pair_flops * pairs * self._draft_layer_share
            compute += (self._draft_active_flops * tokens + draft_pairs) / r.flops
            assert r.draft_weights is not None
            weights += r.draft_weights.read(tokens)
        if not alone:
            return compute
        return max(compute, weights / r.bw)

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
        pre, link, fixed = self.beside_decode_s(decode_seqs, prefill_tokens, prefill_pairs, prefill_prompts)
        return self.decode_s(decode_seqs, context_tokens) + pre + link + fixed

    def beside_decode_s(
        self, decode_seqs: int, prefill_tokens: int = 0, prefill_pairs: float = 0.0, prefill_prompts: int = 1
    ) -> tuple[float, float, float]:
        """An iteration's parts other than the decode part, which alone depends on the context:
        the prefill, the in-server link and the fixed costs (``iteration_s`` adds them to the
        decode part in this order; a caller pricing many iterations may keep them)."""
        r = self._r
        fixed = self._step_s + (self._prefill_fixed_s if prefill_tokens > 0 else 0.0)
        link = r.comm_s(decode_seqs * (self._k + 1) + prefill_tokens)
        if self._k and decode_seqs > 0:  # the draft's passes all-reduce on its own layers
            link += self._k * self._draft_layer_share * r.comm_s(decode_seqs)
        pre = self.prefill_s(prefill_tokens, prefill_pairs, alone=decode_seqs <= 0, prompts=prefill_prompts)
        return pre, link, fixed

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
    prefix: PrefixCache | None = None  # the traffic's shared prompt prefix, found cached at its hit rate
