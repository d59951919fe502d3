"""What one prompt costs a replica: its chunks, its latency and the iteration time it adds."""

from __future__ import annotations

from dataclasses import dataclass

from planner.perf.engine import Engine


@dataclass(frozen=True)
class Prompt:
    """One prompt prefilled beside a decoding batch."""

    latency_s: float  # from the start of its first chunk to its first token (plus the fixed overhead)
    extra_s: float  # iteration time it adds over decode-only iterations (the queue's service time)
    chunks: int
    fixed_s: float = 0.0  # the part of extra_s an iteration pays once, shared by the prompts in it

    def extra_shared_s(self, sharing: float) -> float:
        """Its extra time when ``sharing`` prompts share each prefill iteration."""
        return self.extra_s - self.fixed_s + self.fixed_s / max(1.0, sharing)


def prompt_cost(engine: Engine, input_tokens: float, batch: float, context_tokens: float) -> Prompt:
    """A prompt of ``input_tokens`` prefilled in chunks of the token budget left beside ``batch``
    sequences decoding with ``context_tokens`` between them. With attention data parallelism the
    queue sees prompts on different groups prefill side by side (its extra time per prompt),
    while one prompt's own latency runs on its group alone."""
    cost = engine.cost
    b = max(0, round(batch))
    room = max(1, engine.limits.token_budget - b)
    base = float(cost.iteration_s(b, context_tokens))
    done, latency, extra, chunks = 0, 0.0, 0.0, 0
    total = max(1, round(input_tokens))
    groups = cost.attention_dp
    while done < total:
        chunk = min(room, total - done)
        pairs = cost.chunk_pairs(done, chunk)
        t = float(cost.iteration_s(b, context_tokens, chunk, pairs))
        if groups > 1:
            side_by_side = cost.iteration_s(b, context_tokens, chunk * groups, pairs * groups, groups)
            extra += (float(side_by_side) - base) / groups
        else:
            extra += t - base
        latency, done, chunks = latency + t, done + chunk, chunks + 1
    extra = max(extra, 0.0)
    return Prompt(
        latency_s=latency + engine.ttft_overhead_s,
        extra_s=extra,
        chunks=chunks,
        fixed_s=min(extra, chunks * cost.prefill_fixed_s),
    )
