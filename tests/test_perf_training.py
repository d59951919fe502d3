"""The training physics, held to hand calculations."""

from __future__ import annotations

import pytest

from planner.perf.shapes import shape_of
from planner.perf.training import TrainingQuery, estimate_training, memory_per_gpu_bytes, training_flops


def _q(catalog, **kw):
    base = dict(
        model=shape_of("llama-3.1-70b", catalog),
        gpu=catalog.gpu("H100-SXM"),
        gpus=8,
        tokens=1e9,
        fabric=catalog.fabrics["none"],
        gpus_per_server=8,
        gpu_link="nvlink",
    )
    return TrainingQuery(**{**base, **kw})


def _est(catalog, q):
    eff = catalog.efficiency
    return estimate_training(q, eff.generations[q.gpu.generation], eff.training, eff.serving.memory_reserve_fraction)


def test_full_training_flops_are_six_n_d_plus_attention(catalog):
    shape = shape_of("llama-3.1-8b", catalog)
    flops = training_flops(shape, 1e12, "full", 4096, 0.667)
    dense = 6 * 8.03e9 * 1e12
    attention = 6 * 32 * 4096 * 4096 * 1e12
    assert flops == pytest.approx(dense + attention)
    assert training_flops(shape, 1e12, "lora", 4096, 0.667) == pytest.approx(0.667 * flops)


def test_70b_full_finetune_memory(catalog):
    """16 bytes/param (bf16 weights + grads, fp32 master + Adam m, v) = 1.13 TB, sharded."""
    t = catalog.efficiency.training
    q = _q(catalog, gpus=64, method="full")
    state = 16 * 70.6e9
    act = 4096 * 80 * 8192 * t.activation_bytes_per_token_layer_hidden / 8
    assert memory_per_gpu_bytes(q, t) == pytest.approx(state / 64 + act)
    est = _est(catalog, _q(catalog, gpus=8, method="full"))
    assert not est.fits  # 141 GB per GPU on 8 GPUs
    usable = 80e9 * 0.9
    # the smallest whole-server job whose share fits
    assert est.min_gpus == 8 * -(-state // ((usable - act) * 8))


def test_lora_needs_far_less_memory_than_full(catalog):
    t = catalog.efficiency.training
    full = memory_per_gpu_bytes(_q(catalog, method="full"), t)
    lora = memory_per_gpu_bytes(_q(catalog, method="lora"), t)
    qlora = memory_per_gpu_bytes(_q(catalog, method="qlora"), t)
    assert qlora < lora < full / 4


def test_days_are_flops_over_achieved_throughput(catalog):
    q = _q(catalog, model=shape_of("llama-3.1-8b", catalog), gpus=8, tokens=1e11)
    est = _est(catalog, q)
    mfu = catalog.efficiency.generations["hopper"].mfu["bf16"]
    steady = est.total_flops / (8 * 989.4e12 * mfu) / 86400
    # the interruption model's goodput (tests/test_perf_interruptions.py checks it by hand)
    assert est.fits and est.steady_days == pytest.approx(steady)
    assert 0.98 < est.goodput < 1 and est.days == pytest.approx(steady / est.goodput)


def test_scale_out_fabric_matters(catalog):
    shape = shape_of("llama-3.1-8b", catalog)
    ib = _est(catalog, _q(catalog, model=shape, gpus=64, tokens=1e12, fabric=catalog.fabrics["ib-ndr"]))
    eth = _est(catalog, _q(catalog, model=shape, gpus=64, tokens=1e12, fabric=catalog.fabrics["eth-100g"]))
    assert ib.fits and eth.fits and eth.days > 1.3 * ib.days
    alone = _est(catalog, _q(catalog, model=shape, gpus=64, tokens=1e12, fabric=catalog.fabrics["none"]))
    assert not alone.fits and "fabric" in alone.reason


def test_fp8_training_needs_fp8_tensor_cores(catalog):
    est = _est(catalog, _q(catalog, gpu=catalog.gpu("A100-SXM-80GB"), precision="fp8", method="lora"))
    assert not est.fits and "fp8" in est.reason
