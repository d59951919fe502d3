"""Disaggregated prefill and decode (issue 17): the phase model against hand calculations, the
planner's choice against an independent count of GPUs from the phase figures, and the verifier."""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass

import pytest

from planner.catalog import load_catalog
from planner.context import Context, prepare
from planner.explain.serving_mode import serving_mode_reasons
from planner.io.problem_io import loads_problem
from planner.options.disagg import kv_routes
from planner.perf.disagg import DecodeLoad, KvLink, estimate_phase, kv_gb_per_request, prefill_work, transfer_s
from planner.perf.inference import engine_for, estimate_inference
from planner.perf.inference_types import InferenceQuery
from planner.perf.links import link_for
from planner.perf.shapes import shape_of
from planner.pipeline import plan_context
from planner.schema.plan import Plan
from planner.verify import verify
from planner.verify.disagg import check_kv_links

CATALOG = load_catalog()
SERVING = CATALOG.efficiency.serving
GPU, SERVER = "H100-SXM", "hgx-hopper-8gpu"


def _query(model: str, gpus: int, isl: int, osl: int, ttft_ms: float, tpot_ms: float, **kw: object) -> InferenceQuery:
    gpu, chassis = CATALOG.gpus[GPU], CATALOG.servers[SERVER]
    return InferenceQuery(
        model=shape_of(model, CATALOG),
        gpu=gpu,
        gpus=gpus,
        precision="fp8",
        input_tokens=isl,
        output_tokens=osl,
        link=link_for(chassis, gpu, gpus),
        ttft_ms=ttft_ms,
        tpot_ms=tpot_ms,
        **kw,  # type: ignore[arg-type]
    )


GEN = CATALOG.efficiency.generations[CATALOG.gpus[GPU].generation]
NIC = KvLink("nic", 50.0, 5.0)  # one GPU's 400 Gb/s NIC


# ---------------------------------------------------------------- the phase model, by hand


def test_kv_moved_per_request_is_the_prompts_cache_once() -> None:
    # Llama-3.1-70B: 80 layers x 8 KV heads x 128 dims x (K and V) x 1 byte (fp8) per token
    q = _query("llama-3.1-70b", 4, 8192, 256, 2000, 30)
    assert kv_gb_per_request(q, SERVING) == pytest.approx(80 * 8 * 128 * 2 * 1 * 8192 / 1e9)


def test_kv_transfer_time_is_bytes_over_the_links_share() -> None:
    gb = 1.342177
    expected_s = SERVING.disagg_handoff_ms / 1000 + 5e-6 + gb / (50.0 * SERVING.link_eff)
    assert transfer_s(gb, NIC, SERVING) == pytest.approx(expected_s)
    # and the prefill replica's TTFT at a trickle is its prompt alone plus that transfer
    q = _query("llama-3.1-70b", 4, 8192, 256, 2000, 30, rate=1e-4)
    est = estimate_phase(q, "prefill", NIC, GEN, SERVING)
    engine = engine_for(q, GEN, SERVING)
    assert engine is not None
    alone_s = prefill_work(engine, 8192).latency_s
    assert est.ttft_p99_ms == pytest.approx(1000 * (alone_s + transfer_s(kv_gb_per_request(q, SERVING), NIC, SERVING)))


def test_a_long_prompt_prefill_is_compute_bound() -> None:
    """8,192 tokens of a 70B model: at least the FLOPs at peak, at most twice them at the
    calibrated efficiency plus fixed costs (a roofline bracket, independent of the engine)."""
    q = _query("llama-3.1-70b", 4, 8192, 256, 2000, 30)
    engine = engine_for(q, GEN, SERVING)
    assert engine is not None
    m = q.model
    flops = 2 * m.active_params_b * 1e9 * 8192 + m.attention_flops_per_pair(decode=False) * m.causal_pairs(8192)
    peak = 4 * CATALOG.gpus[GPU].tflops_dense["fp8"] * 1e12
    latency = prefill_work(engine, 8192).latency_s
    assert flops / peak < latency < 2 * flops / (peak * GEN.compute_eff_for("fp8")) + 0.2


def test_a_lone_decode_step_reads_the_weights() -> None:
    """Batch 1 of a dense model is bandwidth-bound: weights / (bandwidth x efficiency) plus the
    step overhead and two all-reduces per layer at the NVLink latency, within 5% (the KV read
    and the all-reduces' bytes are small)."""
    q = _query("llama-3.1-70b", 4, 1024, 256, 2000, 30)
    engine = engine_for(q, GEN, SERVING)
    assert engine is not None
    weights = q.model.params_b * 1e9 * 1.0  # fp8
    bw = 4 * CATALOG.gpus[GPU].memory_bandwidth_gb_per_s * 1e9 * GEN.bandwidth_eff
    all_reduces = 2 * q.model.layers * SERVING.link_latency_us["nvlink"] * 1e-6
    hand = weights / bw + SERVING.step_overhead_ms / 1000 + all_reduces
    assert DecodeLoad(engine, 1024, 256).step_s(1) == pytest.approx(hand, rel=0.05)


@pytest.mark.parametrize(("isl", "osl", "tpot_ms"), [(8192, 256, 30), (1024, 512, 50), (256, 128, 25)])
def test_decode_batch_follows_littles_law_and_meets_tpot(isl: int, osl: int, tpot_ms: float) -> None:
    q = _query("llama-3.1-70b", 4, isl, osl, 5000, tpot_ms)
    est = estimate_phase(q, "decode", NIC, GEN, SERVING)
    assert est.fits
    rate = est.planning_requests_per_s
    # Little: sequences decoding = arrivals x (steps per request) x (time per step)
    assert est.batch == pytest.approx(rate * (osl - 1) * est.tpot_ms / 1000, rel=0.02, abs=1)
    assert est.tpot_p99_ms <= tpot_ms + 1e-6
    assert est.tpot_p99_ms >= est.tpot_ms
    assert rate <= SERVING.headroom * est.requests_per_s + 1e-9


def test_prefill_rate_is_the_largest_meeting_ttft() -> None:
    q = _query("llama-3.1-70b", 4, 8192, 256, 2000, 30)
    est = estimate_phase(q, "prefill", NIC, GEN, SERVING)
    assert est.fits and est.ttft_p99_ms <= 2000 + 1e-6
    rate = est.planning_requests_per_s
    if rate < SERVING.headroom * est.requests_per_s * 0.999:  # the target, not the headroom, binds
        above = estimate_phase(
            _query("llama-3.1-70b", 4, 8192, 256, 2000, 30, rate=rate * 1.01), "prefill", NIC, GEN, SERVING
        )
        assert above.ttft_p99_ms > 2000


# ---------------------------------------------------------------- plans against a GPU count


def _problem(isl: int, osl: int, ttft_ms: float, tpot_ms: float, rps: float, mode: str = "auto") -> str:
    others = ", ".join(g for g in CATALOG.gpus if g != GPU)
    return textwrap.dedent(
        f"""
        name: disagg-{isl}x{osl}
        horizon_years: 3
        catalog:
          exclude: [{others}]
        inference:
          - name: svc
            model: llama-3.1-70b
            precisions: [fp8]
            requests_per_s: {rps}
            input_tokens: {isl}
            output_tokens: {osl}
            ttft_ms: {ttft_ms}
            tpot_ms: {tpot_ms}
            disaggregation: {mode}
        """
    )


@dataclass
class Planned:
    ctx: Context
    plan: Plan


def _plan(text: str) -> Planned:
    ctx = prepare(loads_problem(text, "disagg.yaml"))
    plan = plan_context(ctx)
    assert plan.status == "optimal", plan.diagnosis
    assert plan.verification == []
    return Planned(ctx, plan)


def _hand_gpus(isl: int, osl: int, ttft_ms: float, tpot_ms: float, rps: float) -> tuple[int, int]:
    """Fewest GPUs by hand from the phase figures on one 8-GPU server type: aggregated, the best
    kind alone; disaggregated, the best prefill kind plus the best decode kind (over the NICs)."""
    chassis, gpu = CATALOG.servers[SERVER], CATALOG.gpus[GPU]
    nic = next(link for key, link, _ in kv_routes(CATALOG, chassis, gpu) if key.fabric != "none")
    agg, pre, dec = math.inf, math.inf, math.inf
    for n in (1, 2, 4, 8):
        q = _query("llama-3.1-70b", n, isl, osl, ttft_ms, tpot_ms)
        a = estimate_inference(q, GEN, SERVING)
        if a.fits:
            agg = min(agg, n * math.ceil(rps / a.planning_requests_per_s))
        for phase in ("prefill", "decode"):
            e = estimate_phase(q, phase, nic, GEN, SERVING)
            if e.fits:
                need = n * math.ceil(rps / e.planning_requests_per_s)
                pre, dec = (min(pre, need), dec) if phase == "prefill" else (pre, min(dec, need))
    return int(agg), int(pre + dec)


def _gpus(plan: Plan) -> int:
    return sum(r.count * r.gpus_per_replica for s in plan.inference for r in s.replicas)


LONG = (8192, 256, 2000, 30, 12)  # long prompts, tight TPOT
SHORT = (128, 512, 2000, 60, 12)  # short prompts, loose targets


@pytest.fixture(scope="module")
def long_auto() -> Planned:
    return _plan(_problem(*LONG))


@pytest.fixture(scope="module")
def long_never() -> Planned:
    return _plan(_problem(*LONG, mode="never"))


def test_long_prompts_tight_tpot_disaggregate_strictly_cheaper(long_auto: Planned, long_never: Planned) -> None:
    agg_gpus, split_gpus = _hand_gpus(*LONG)
    assert split_gpus < agg_gpus * 0.8  # the hand count predicts a clear saving
    row = long_auto.plan.inference[0]
    assert row.serving_mode == "disaggregated"
    assert long_auto.plan.tco_usd < long_never.plan.tco_usd
    # the planner's GPUs: no more than the hand count's (in whole 8-GPU servers), and the
    # aggregated plan exactly the hand count of its best kind (in whole servers)
    assert _gpus(long_auto.plan) <= 8 * math.ceil(split_gpus / 8)
    assert 8 * math.ceil(_gpus(long_never.plan) / 8) == 8 * math.ceil(agg_gpus / 8)
    # the KV caches it reports are its prefill replicas' capacity x the prompt's cache
    kv = sum(r.count * r.rps_per_replica * r.kv_gb_per_request for r in row.replicas if r.mode == "prefill")
    assert row.kv_transfer_gb_per_s == pytest.approx(kv, abs=1e-3)
    pre = sum(r.count for r in row.replicas if r.mode == "prefill")
    dec = sum(r.count for r in row.replicas if r.mode == "decode")
    assert row.prefill_decode_ratio == f"{pre}:{dec}"
    assert row.capacity_rps >= row.required_rps


def test_short_prompts_stay_aggregated() -> None:
    agg_gpus, split_gpus = _hand_gpus(*SHORT)
    assert split_gpus >= agg_gpus  # the hand count: splitting saves no GPU
    auto = _plan(_problem(*SHORT))
    always = _plan(_problem(*SHORT, mode="always"))
    assert auto.plan.inference[0].serving_mode == "aggregated"
    assert always.plan.inference[0].serving_mode == "disaggregated"
    assert auto.plan.tco_usd < always.plan.tco_usd


def test_auto_is_the_cheaper_of_never_and_always(long_auto: Planned, long_never: Planned) -> None:
    always = _plan(_problem(*LONG, mode="always"))
    assert long_auto.plan.tco_usd == pytest.approx(min(long_never.plan.tco_usd, always.plan.tco_usd), abs=1.0)


def test_the_reason_is_the_other_modes_best_plan(long_auto: Planned, long_never: Planned) -> None:
    plan = long_auto.plan.model_copy(deep=True)
    serving_mode_reasons(long_auto.ctx, plan)
    row = plan.inference[0]
    assert row.other_mode_tco_usd == pytest.approx(long_never.plan.tco_usd, abs=1.0)
    assert row.mode_reason and "aggregated" in row.mode_reason


# ---------------------------------------------------------------- the verifier re-checks


def _verify(p: Planned, plan: Plan) -> list[str]:
    return verify(p.ctx.problem, p.ctx.catalog, plan)


def test_verifier_catches_a_phase_claiming_too_much(long_auto: Planned) -> None:
    for mode in ("prefill", "decode"):
        plan = long_auto.plan.model_copy(deep=True)
        rep = next(r for r in plan.inference[0].replicas if r.mode == mode)
        rep.rps_per_replica *= 1.5
        assert any(f"{mode} claims" in e for e in _verify(long_auto, plan)), mode


def test_verifier_catches_a_latency_or_kv_size_off(long_auto: Planned) -> None:
    plan = long_auto.plan.model_copy(deep=True)
    pre = next(r for r in plan.inference[0].replicas if r.mode == "prefill")
    pre.ttft_ms -= 100  # as if the KV transfer were left out
    assert any("claims p99 TTFT/TPOT" in e for e in _verify(long_auto, plan))
    plan = long_auto.plan.model_copy(deep=True)
    pre = next(r for r in plan.inference[0].replicas if r.mode == "prefill")
    pre.kv_gb_per_request /= 2
    assert any("GB of KV per request" in e for e in _verify(long_auto, plan))


def test_verifier_catches_kv_traffic_beyond_the_nics(long_auto: Planned) -> None:
    plan = long_auto.plan.model_copy(deep=True)
    errs: list[str] = []
    check_kv_links(long_auto.ctx.catalog, plan, errs)
    assert errs == []
    for r in plan.inference[0].replicas:
        r.kv_gb_per_request *= 1000  # a cache a thousand times larger than the NICs can carry
    check_kv_links(long_auto.ctx.catalog, plan, errs)
    assert any("GB/s of KV cache" in e for e in errs)


def test_verifier_catches_a_group_without_its_other_phase(long_auto: Planned) -> None:
    plan = long_auto.plan.model_copy(deep=True)
    row = plan.inference[0]
    row.replicas = [r for r in row.replicas if r.mode != "decode"]  # prefill alone serves nothing
    assert any("service:svc:rate" in e for e in _verify(long_auto, plan))


def test_always_with_spares_is_bad_input() -> None:
    text = _problem(*LONG, mode="always") + "    spare_replicas: 1\n"
    with pytest.raises(Exception, match="disaggregation: always cannot be combined with `spare_replicas`"):
        loads_problem(text, "bad.yaml")


def test_prefix_hits_raise_prefill_capacity_as_the_flops_say() -> None:
    """A prefill replica's throughput is prompts over FLOPs: with 6,144 of 8,192 tokens shared
    and found 90% of the time, the FLOPs per prompt fall by the hand-computed ratio, and the
    replica's ceiling rises by it within 10% (fixed costs per iteration do not shrink)."""
    from planner.perf.speculation import PrefixCache

    plain = _query("llama-3.1-70b", 4, 8192, 256, 2000, 30)
    cached = _query("llama-3.1-70b", 4, 8192, 256, 2000, 30, prefix=PrefixCache(6144, 0.9))
    m = plain.model
    apf = m.attention_flops_per_pair(decode=False)
    miss = 2 * m.active_params_b * 1e9 * 8192 + apf * m.causal_pairs(8192)
    hit = 2 * m.active_params_b * 1e9 * 2048 + apf * (m.causal_pairs(8192) - m.causal_pairs(6144))
    flops_ratio = miss / (0.1 * miss + 0.9 * hit)
    a = estimate_phase(plain, "prefill", NIC, GEN, SERVING)
    b = estimate_phase(cached, "prefill", NIC, GEN, SERVING)
    assert b.requests_per_s / a.requests_per_s == pytest.approx(flops_ratio, rel=0.10)
    assert b.planning_requests_per_s > a.planning_requests_per_s
