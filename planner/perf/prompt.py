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


def prompt_cost(
    engine: Engine,
    input_tokens: float,
    batch: float,
    context_tokens: float,
    together: float = 1.0,
    cached: float = 0.0,
) -> Prompt:
    """A prompt of ``input_tokens`` prefilled in chunks of the token budget left beside ``batch``
    sequences decoding with ``context_tokens`` between them, ``together`` prompts per prefill
    iteration on average. Its own latency runs alone (on one attention group when the replica
    runs attention data-parallel); the extra time it adds to iterations is its share of an
    iteration prefilling ``together`` prompts, side by side on as many attention groups.
    ``cached``: tokens before these found in the prefix cache (attended to, not prefilled)."""
    cost = engine.cost
    b = max(0, round(batch))
    room = max(1, engine.limits.token_budget - b)
    base = float(cost.iteration_s(b, context_tokens))
    fixed = cost.prefill_fixed_s
    side = max(1, min(cost.attention_dp, round(together)))
    done, latency, work, chunks = 0, 0.0, 0.0, 0
    total = max(1, round(input_tokens))
    while done < total:
        chunk = min(room, total - done)
        pairs = cost.chunk_pairs(round(cached) + done, chunk)
        alone = float(cost.iteration_s(b, context_tokens, chunk, pairs))
        latency += alone
        shared = alone if side == 1 else float(cost.iteration_s(b, context_tokens, chunk * side, pairs * side, side))
        work += max(0.0, shared - base - fixed) / side
        done, chunks = done + chunk, chunks + 1
    return Prompt(
        latency_s=latency + engine.ttft_overhead_s,
        extra_s=work + chunks * fixed,
        chunks=chunks,
        fixed_s=chunks * fixed,
    )
