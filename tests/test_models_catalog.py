"""The 2026 models in the catalog, and the physics their shapes bring, held to hand calculations."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from planner.io.hf_config import model_from_config
from planner.perf.inference import estimate_inference
from planner.perf.inference_types import InferenceQuery, weights_of
from planner.perf.links import link_for
from planner.perf.shapes import shape_of
from planner.perf.training import training_flops

CONFIGS = Path(__file__).parent / "data" / "configs"
NEW_MODELS = (
    "deepseek-v3",
    "deepseek-r1",
    "qwen3-8b",
    "qwen3-14b",
    "qwen3-32b",
    "qwen3-30b-a3b",
    "qwen3-235b-a22b",
    "gpt-oss-20b",
    "gpt-oss-120b",
    "llama-4-scout",
    "llama-4-maverick",
    "kimi-k2",
)


def _query(catalog, model, gpu, tp=1, precision="bf16", **kw):
    g = catalog.gpu(gpu)
    server = next(s for s in catalog.servers.values() if g.id in s.gpus and s.gpus_per_server >= tp)
    return InferenceQuery(
        model=shape_of(model, catalog), gpu=g, gpus=tp, precision=precision, link=link_for(server, g, tp), **kw
    )


def _est(catalog, q):
    eff = catalog.efficiency
    return estimate_inference(q, eff.generations[q.gpu.generation], eff.serving)


@pytest.mark.parametrize("model_id", NEW_MODELS)
def test_each_new_model_is_in_the_catalog_with_its_config_as_source(catalog, model_id):
    m = catalog.model(model_id)
    assert m.source.url.endswith("/config.json") and "huggingface.co" in m.source.url
    assert m.active_params_b < m.params_b
    assert "Published" in m.notes  # the maker's own figure beside the derived one


@pytest.mark.parametrize(
    "fixture, model_id",
    [
        ("deepseek-v3.json", "deepseek-v3"),
        ("qwen3-32b.json", "qwen3-32b"),
        ("qwen3-30b-a3b.json", "qwen3-30b-a3b"),
        ("gpt-oss-120b.json", "gpt-oss-120b"),
        ("llama-4-maverick.json", "llama-4-maverick"),
        ("kimi-k2.json", "kimi-k2"),
    ],
)
def test_catalog_entries_are_what_import_model_derives(catalog, fixture, model_id):
    """The catalog and `catalog import-model` agree on every shape field."""
    imported, _ = model_from_config(CONFIGS / fixture, model_id)
    entry = catalog.model(model_id)
    skip = {"name", "source", "notes"}
    assert imported.model_dump(exclude=skip) == entry.model_dump(exclude=skip)


def test_mla_kv_bytes_per_token_deepseek_v3_by_hand(catalog):
    shape = shape_of("deepseek-v3", catalog)
    # 61 layers x (512 latent + 64 RoPE key) x 1 byte (FP8 cache) = 35,136 bytes per token
    assert shape.kv_bytes_per_token(1) == 61 * (512 + 64) * 1 == 35_136
    # not what GQA's formula would give with its 128 nominal KV heads of 192: 57x more
    assert shape.kv_bytes_per_token(1) * 57 < 2 * 61 * 128 * 192
    # the latent belongs to no head: tensor parallelism over 8 GPUs holds it 8 times
    assert shape.kv_replicas(8) == 8
    assert shape_of("llama-3.1-70b", catalog).kv_replicas(8) == 1  # 8 KV heads over 8 GPUs
    assert shape_of("qwen3-235b-a22b", catalog).kv_replicas(8) == 2  # 4 KV heads over 8 GPUs


def test_mla_kv_cache_per_request_in_the_estimate(catalog):
    q = _query(catalog, "deepseek-r1", "H200-SXM", tp=8, precision="fp8", input_tokens=1024, output_tokens=1024)
    est = _est(catalog, q)
    assert est.fits
    # 2048 tokens x 35,136 bytes, held by each of the 8 GPUs
    assert est.kv_gb_per_request == pytest.approx(2048 * 35_136 * 8 / 1e9)
    # attention data parallelism keeps each sequence on one GPU: 8x the sequences fit
    dp = _est(catalog, replace(q, attention_dp=8))
    assert dp.kv_gb_per_request == pytest.approx(2048 * 35_136 / 1e9)
    assert dp.max_batch_by_memory > 2 * est.max_batch_by_memory
    assert dp.factors["attention_dp"] == 8 and dp.factors["kv_replicas"] == 1


def test_sliding_window_layers_cap_gpt_oss_kv(catalog):
    shape = shape_of("gpt-oss-120b", catalog)
    per_layer_token = 2 * 8 * 64 * 2  # K and V, 8 KV heads of 64, bf16
    assert shape.kv_bytes_per_token(2) == 36 * per_layer_token
    # 32K tokens: 18 full layers keep them all, 18 sliding layers keep the last 128
    assert shape.kv_bytes(32_768, 2) == per_layer_token * (18 * 32_768 + 18 * 128)
    # below the window every layer keeps every token
    assert shape.kv_bytes(100, 2) == 36 * per_layer_token * 100
    # growing the context by 10K tokens grows only the full layers' cache
    assert shape.kv_bytes(42_768, 2) - shape.kv_bytes(32_768, 2) == per_layer_token * 18 * 10_000


def test_gpt_oss_120b_ships_mxfp4_experts_and_fits_one_80gb_gpu(catalog):
    shape = shape_of("gpt-oss-120b", catalog)
    w = weights_of(shape, "bf16", catalog.efficiency.serving.int4_overhead)
    # experts at 4.25 bits, the rest (attention, router, embeddings) at bf16
    assert w.experts == pytest.approx(114.702e9 * 4.25 / 8)
    assert w.dense == pytest.approx((116.829 - 114.702) * 1e9 * 2)
    est = _est(catalog, _query(catalog, "gpt-oss-120b", "H100-SXM", tp=1, input_tokens=1024, output_tokens=256))
    assert est.fits and est.weights_gb < 66


def test_moe_bytes_read_grow_with_batch_deepseek_v3(catalog):
    """Batch 1 reads the dense part and 8 of 256 experts per layer; batch 256 nearly all of them."""
    w = weights_of(shape_of("deepseek-v3", catalog), "fp8", 1.0)
    experts = 653.909e9  # routed experts, FP8: 1 byte each
    dense = (671.026 - 653.909) * 1e9  # attention, 3 dense layers, shared experts, embeddings, head
    assert w.read(1) == pytest.approx(dense + experts * 8 / 256)
    assert w.read(256) == pytest.approx(dense + experts * (1 - (1 - 8 / 256) ** 256))
    assert w.read(1) == pytest.approx(37.5e9, rel=0.01)  # ~ the active parameters
    assert w.read(256) > 0.99 * w.total  # (1 - 1/32)^256 = 0.0003 of the experts go untouched
    assert w.total == pytest.approx(671.026e9)  # every expert is held


def test_decode_step_reads_only_routed_experts_at_small_batch(catalog):
    """Serving a MoE at batch 1 is bound by its active bytes, not by its size."""
    lengths = dict(input_tokens=128, output_tokens=1000, concurrency=1)
    moe = _est(catalog, _query(catalog, "qwen3-30b-a3b", "H100-SXM", **lengths))
    dense = _est(catalog, _query(catalog, "qwen3-32b", "H100-SXM", **lengths))
    assert moe.weights_gb == pytest.approx(dense.weights_gb, rel=0.1)  # about the same size held
    assert moe.bound == dense.bound == "memory"
    assert moe.tpot_ms < 0.4 * dense.tpot_ms  # but a tenth of it read per token (plus fixed costs)


def test_training_flops_use_active_parameters(catalog):
    shape = shape_of("deepseek-v3", catalog)
    flops = training_flops(shape, 1e12, "full", 4096, 1.0)
    dense_part = 6 * 36.626e9 * 1e12
    # MLA attention, K and V expanded per head: 2 x 128 heads x (128 + 64 + 128) per pair,
    # causal over 4096 tokens (2048 pairs per token on average), forward + backward (3x)
    attention = 3 * 2 * 128 * (128 + 64 + 128) * 61 * 4096 / 2 * 1e12
    assert flops == pytest.approx(dense_part + attention)


@pytest.mark.parametrize("model_id", NEW_MODELS)
def test_estimates_run_for_every_new_model(catalog, model_id):
    """8 x H100 at FP8: sensible numbers, or a clear reason when the weights do not fit."""
    est = _est(
        catalog, _query(catalog, model_id, "H100-SXM", tp=8, precision="fp8", input_tokens=1024, output_tokens=256)
    )
    if est.fits:
        assert est.output_tokens_per_s > 0 and 0 < est.tpot_ms < 1000
    else:
        assert "GB" in est.reason
