"""A naive roofline for the same rows: what the report compares the planner with.

Built from the planner's own shapes and iteration cost (``planner.perf.engine``), with every
efficiency at 1.0 (100% of peak FLOPS and HBM bandwidth) and every fixed cost at 0:

- TTFT: one prompt's prefill, its FLOPs at peak or the weights it needs read once at peak
  bandwidth, whichever is slower; no queueing behind other prompts, no link time, no overheads;
- TPOT: one decode step at the row's concurrency, the weights it touches plus every
  sequence's KV cache (at mean context) read at peak bandwidth, or its FLOPs at peak,
  whichever is slower; no prefill mixed in, no link time, no overheads.

Same shapes, lengths as the row states them, no new physics: only the planner's
efficiencies, overheads, queueing and communication are left out.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner import units as u
from planner.perf.inference import engine_for
from planner.perf.inference_types import InferenceQuery
from planner.schema.efficiency import GenerationEfficiency, ServingAssumptions

# ServingAssumptions fields that are fixed costs or queueing, all 0 in the roofline
_OVERHEADS = (
    "step_overhead_ms",
    "prefill_overhead_us_per_layer",
    "ttft_overhead_ms",
    "moe_layer_overhead_us",
    "moe_prefill_overhead_us_per_layer",
    "ttft_queue_iterations",
)


@dataclass(frozen=True)
class Roofline:
    ttft_ms: float
    tpot_ms: float


def at_peak(gen: GenerationEfficiency) -> GenerationEfficiency:
    """The generation's figures with every achieved share of peak at 1.0."""
    return gen.model_copy(
        update={
            "bandwidth_eff": 1.0,
            "compute_eff": dict.fromkeys(gen.compute_eff, 1.0),
            "moe_prefill_eff": 1.0,
        }
    )


def without_overheads(serving: ServingAssumptions) -> ServingAssumptions:
    return serving.model_copy(update=dict.fromkeys(_OVERHEADS, 0.0))


def roofline(q: InferenceQuery, gen: GenerationEfficiency, serving: ServingAssumptions) -> Roofline | None:
    """The naive roofline's mean TTFT and TPOT for ``q`` at ``q.clients`` sequences; None
    when not one request fits the replica's memory."""
    engine = engine_for(q, at_peak(gen), without_overheads(serving))
    if engine is None:
        return None
    cost, model = engine.cost, q.model
    prompt = q.input_tokens
    ttft_s = cost.prefill_s(prompt, model.causal_pairs(prompt), alone=True)
    seqs = max(1, q.clients or q.concurrency or 1)
    tpot_s = float(cost.decode_s(seqs, seqs * (q.input_tokens + q.output_tokens / 2)))
    return Roofline(ttft_ms=u.ms(ttft_s), tpot_ms=u.ms(tpot_s))
