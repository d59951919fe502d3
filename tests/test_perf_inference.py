"""The inference physics, held to hand calculations."""

from __future__ import annotations

import pytest

from planner.perf.inference import estimate_inference
from planner.perf.inference_types import InferenceQuery, Link
from planner.perf.links import link_for
from planner.perf.shapes import inline_shape, shape_of
from planner.schema.model_ref import InlineModel


def _query(catalog, model, gpu, tp=1, precision="bf16", **kw):
    g = catalog.gpu(gpu)
    server = next(s for s in catalog.servers.values() if g.id in s.gpus and s.gpus_per_server >= tp)
    return InferenceQuery(
        model=shape_of(model, catalog), gpu=g, gpus=tp, precision=precision, link=link_for(server, g, tp), **kw
    )


def _est(catalog, q):
    eff = catalog.efficiency
    return estimate_inference(q, eff.generations[q.gpu.generation], eff.serving)


def test_kv_bytes_llama3_70b_uses_grouped_query_attention(catalog):
    shape = shape_of("llama-3.1-70b", catalog)
    # 2 (K and V) x 80 layers x 8 KV heads x 128 head dim x 2 bytes = 327,680 bytes per token
    assert shape.kv_bytes_per_token(2) == 2 * 80 * 8 * 128 * 2 == 327_680
    # Llama-2-7B has full multi-head attention: 32 KV heads
    assert shape_of("llama-2-7b", catalog).kv_bytes_per_token(2) == 2 * 32 * 32 * 128 * 2


def test_decode_at_batch_one_is_weights_over_bandwidth(catalog):
    """TPOT at batch 1 = weight bytes / (bandwidth x efficiency) + step overhead (+ tiny prefill share)."""
    q = _query(catalog, "llama-2-7b", "H100-SXM", input_tokens=1, output_tokens=100_000, concurrency=1)
    est = _est(catalog, q)
    eff = catalog.efficiency.generations["hopper"].bandwidth_eff
    overhead = catalog.efficiency.serving.step_overhead_ms
    weights = 6.74e9 * 2
    kv = 1.5 * 0 + (1 + 100_000 / 2) * 2 * 32 * 32 * 128 * 2  # mean context of one sequence
    hand_ms = (weights + kv) / (3350e9 * eff) * 1e3 + overhead
    assert est.fits
    assert est.tpot_ms == pytest.approx(hand_ms, rel=0.01)
    assert est.bound == "memory"


def test_quantisation_speeds_decoding(catalog):
    """Halving the weight bytes (fp8 vs bf16) shortens the bandwidth-bound step."""
    bf16 = _est(
        catalog, _query(catalog, "llama-3.1-8b", "H100-SXM", concurrency=1, input_tokens=128, output_tokens=128)
    )
    fp8 = _est(
        catalog,
        _query(
            catalog, "llama-3.1-8b", "H100-SXM", precision="fp8", concurrency=1, input_tokens=128, output_tokens=128
        ),
    )
    assert fp8.tpot_ms < 0.7 * bf16.tpot_ms


def test_70b_bf16_does_not_fit_one_80gb_gpu_but_fits_two(catalog):
    one = _est(catalog, _query(catalog, "llama-3.1-70b", "H100-SXM", tp=1, input_tokens=1024, output_tokens=256))
    two = _est(catalog, _query(catalog, "llama-3.1-70b", "H100-SXM", tp=2, input_tokens=1024, output_tokens=256))
    assert not one.fits and "GB" in one.reason
    assert two.fits
    # KV budget by hand: 2 x 80 GB x 0.9 usable - 70.6e9 x 2 bytes of weights, per request
    # (1024 + 128 mean tokens) x 327,680 bytes
    spare = 2 * 80e9 * 0.9 - 70.6e9 * 2
    assert two.max_batch_by_memory == int(spare // ((1024 + 128) * 327_680))


def test_unsupported_precision_is_refused_with_reason(catalog):
    lengths = dict(input_tokens=512, output_tokens=128)
    est = _est(catalog, _query(catalog, "llama-3.1-8b", "A100-SXM-80GB", precision="fp8", **lengths))
    assert not est.fits and "fp8" in est.reason
    # int4 is weight-only: it runs on a GPU without int4 tensor cores, computing at 16 bits
    est4 = _est(catalog, _query(catalog, "llama-3.1-8b", "A100-SXM-80GB", precision="int4", **lengths))
    assert est4.fits and est4.factors["compute_precision"] == "bf16"


def test_tpot_target_picks_the_largest_batch_that_meets_it(catalog):
    base = dict(input_tokens=512, output_tokens=256)
    loose = _est(catalog, _query(catalog, "llama-3.1-8b", "L40S", tpot_ms=100, **base))
    tight = _est(catalog, _query(catalog, "llama-3.1-8b", "L40S", tpot_ms=30, **base))
    assert loose.fits and tight.fits
    assert tight.batch < loose.batch
    # targets are held as p99; the mean is lower
    assert tight.tpot_p99_ms <= 30 and loose.tpot_p99_ms <= 100
    assert tight.tpot_ms < tight.tpot_p99_ms
    # one more sequence would break the target (or memory)
    over = _est(catalog, _query(catalog, "llama-3.1-8b", "L40S", concurrency=tight.batch + 1, **base))
    assert (not over.fits) or over.tpot_p99_ms > 30


def test_tensor_parallel_over_pcie_pays_more_than_over_nvlink(catalog):
    shape = shape_of("llama-3.1-70b", catalog)
    g = catalog.gpu("H100-SXM")
    common = dict(model=shape, gpu=g, gpus=4, precision="fp8", input_tokens=1024, output_tokens=256, concurrency=16)
    fast = _est(catalog, InferenceQuery(link=Link("nvlink", 450), **common))
    slow = _est(catalog, InferenceQuery(link=Link("pcie", 64), **common))
    assert slow.tpot_ms > fast.tpot_ms


def test_moe_reads_only_active_experts_at_batch_one(catalog):
    q = _query(
        catalog, "mixtral-8x7b", "H100-SXM", tp=1, precision="fp8", concurrency=1, input_tokens=1, output_tokens=1000
    )
    est = _est(catalog, q)
    eff = catalog.efficiency.generations["hopper"].bandwidth_eff
    overhead = catalog.efficiency.serving.step_overhead_ms
    kv = 501 * 2 * 32 * 8 * 128 * 1  # fp8 KV of the mean context
    # 2 of 8 experts per token: one token reads the active 12.9B parameters (fp8: 1 byte each)
    hand_ms = (12.9e9 + kv) / (3350e9 * eff) * 1e3 + overhead
    assert est.tpot_ms == pytest.approx(hand_ms, rel=0.02)
    # a large batch touches every expert: the step reads (nearly) all 46.7B
    big = _est(
        catalog,
        _query(
            catalog,
            "mixtral-8x7b",
            "H100-SXM",
            tp=1,
            precision="fp8",
            concurrency=64,
            input_tokens=1,
            output_tokens=1000,
        ),
    )
    assert big.tpot_ms > 2.5 * (est.tpot_ms - overhead)


def test_inline_model_shape_is_plausible():
    s = inline_shape(InlineModel(params_b=7.0))
    # a 7B dense model: ~32 layers of width ~4096 (Llama-2-7B: 32 x 4096)
    assert 28 <= s.layers <= 36 and 3500 <= s.hidden_size <= 4700
    assert s.derived
