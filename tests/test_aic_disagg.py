"""The disaggregated model against aiconfigurator's disagg rows (issue 17): the row mapping of
planner.perf.calibration.aic_disagg on real rows, and the closed loop against a hand calculation
from planner.perf.disagg's functions."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from planner.catalog import Catalog, load_catalog
from planner.perf.calibration import aic_disagg as ad
from planner.perf.calibration.aic import query_for as agg_query_for
from planner.perf.calibration.aic_mapping import Case
from planner.perf.calibration.mapping import Skip
from planner.perf.disagg import DecodeLoad, kv_gb_per_request, prefill_work
from planner.perf.inference import engine_for
from planner.perf.queueing import mg1_wait_mean

CANDIDATES = (
    Path("/work/shared/calibration"),
    Path(__file__).parents[2] / "shared" / "calibration",  # CI: shared/ beside the project
)
KIMI = "kimik2_5_gb200_trtllm_fp4_disagg_1024x1024_c4_cfg759"  # 1 prefill x 4 GPUs (ADP 4), 4 decode x 8 (TP 8)
H200 = "dsr1_h200_trtllm_fp8_disagg_1024x1024_c3584_cfg328"  # 2 prefill x 8 (ADP 8), 7 decode x 8 (ADP 8)
H100_TP16 = "dsr1_h100_trtllm_fp8_disagg_1024x1024_c30_cfg494"  # workers of 16 H100s
GLM = "2026_03_25_glm_5_gb200_trtllm_fp4_disagg_8192x1024_c5_tp4_0_ep_138"
NO_COUNTS = "2026_03_25_deepseek_r1_b300_sxm_trtllm_fp8_disagg_8192x1024_c5_tp4_0_ep1_0_750"


def _csv() -> Path:
    for folder in CANDIDATES:
        path = folder / "aic_silicon.csv"
        if path.is_file():
            return path
    raise AssertionError(f"aic_silicon.csv not found in {', '.join(map(str, CANDIDATES))}")


@pytest.fixture(scope="module")
def rows() -> dict[str, dict[str, str]]:
    with _csv().open(newline="", encoding="utf-8") as f:
        return {r["id"]: {k: v or "" for k, v in r.items()} for r in csv.DictReader(f)}


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


def test_the_table_has_the_disagg_rows_the_report_counts(rows: dict[str, dict[str, str]]) -> None:
    disagg = [r for r in rows.values() if r["mode"] == "disagg"]
    assert len(disagg) == 1592
    # most rows carry no worker counts; those are skipped, never assumed
    assert sum(1 for r in disagg if not r["prefill_num_workers"]) == 1328


def test_a_gb200_row_maps_to_workers_over_nvlink(rows: dict[str, dict[str, str]], catalog: Catalog) -> None:
    case, _ = ad.to_case(rows[KIMI], catalog)
    assert (case.model, case.gpu, case.precision) == ("kimi-k2", "GB200", "fp4")
    assert (case.input_tokens, case.output_tokens, case.concurrency) == (1024, 1024, 4)
    assert case.prefill == ad.Worker(gpus=4, attention_dp=4, count=1)
    assert case.decode == ad.Worker(gpus=8, attention_dp=1, count=4)
    # 4 + 32 GPUs fit one NVL72 domain: one GPU's NVLink share, one way
    gpu = catalog.gpus["GB200"]
    assert case.kv_link.kind == "nvlink"
    assert case.kv_link.gb_per_s_per_gpu == gpu.nvlink_gb_per_s / 2
    assert case.kv_link.latency_us == catalog.efficiency.serving.link_latency_us["nvlink"]


def test_an_hgx_row_moves_kv_over_one_gpus_nic(rows: dict[str, dict[str, str]], catalog: Catalog) -> None:
    case, _ = ad.to_case(rows[H200], catalog)
    assert (case.model, case.gpu, case.concurrency) == ("deepseek-v3", "H200-SXM", 3584)
    assert case.prefill == ad.Worker(gpus=8, attention_dp=8, count=2)
    assert case.decode == ad.Worker(gpus=8, attention_dp=8, count=7)
    assert case.kv_link.kind == "nic"
    assert case.kv_link.gb_per_s_per_gpu == 400 / 8  # ConnectX-7, 400 Gb/s
    assert case.kv_link.latency_us == catalog.fabrics["ib-ndr"].latency_us


@pytest.mark.parametrize(
    ("row_id", "reason"),
    [
        (GLM, "model not in catalog: zhipuai/GLM-5"),
        (NO_COUNTS, "prefill/decode worker counts not recorded"),
        (H100_TP16, "prefill worker: no catalog server holds 16 x H100-SXM in one replica"),
    ],
)
def test_rows_the_model_cannot_express_are_skipped(
    rows: dict[str, dict[str, str]], catalog: Catalog, row_id: str, reason: str
) -> None:
    with pytest.raises(Skip, match=reason.replace(".", r"\.")):
        ad.to_case(rows[row_id], catalog)


def test_check_counts_predicted_and_skipped(rows: dict[str, dict[str, str]], catalog: Catalog) -> None:
    picked = [rows[i] for i in (KIMI, H200, H100_TP16, GLM, NO_COUNTS)]
    agg = next(r for r in rows.values() if r["mode"] == "agg")
    report = ad.check([*picked, agg], Path("aic_silicon.csv"), catalog)
    assert report.rows == 5  # the aggregated row is not read
    assert len(report.results) + sum(report.skipped.values()) == 5
    assert {r.row_id for r in report.results} <= {KIMI, H200}
    assert report.skipped["model not in catalog: zhipuai/GLM-5"] == 1


def test_the_light_loop_follows_a_hand_calculation(rows: dict[str, dict[str, str]], catalog: Catalog) -> None:
    """4 clients on 1 prefill and 4 decode workers: about one sequence per decode worker, and
    prompts almost never queue. By hand from disagg.py's functions: TPOT = one decode step of 1
    sequence; TTFT = a prompt's own prefill + its KV transfer (+ a small M/D/1 wait);
    throughput = 4 / (TTFT + 1023 x TPOT)."""
    case, _ = ad.to_case(rows[KIMI], catalog)
    eff = catalog.efficiency
    gen, serving = eff.generations[catalog.gpus["GB200"].generation], eff.serving
    qp = ad.query_for(case, case.prefill, catalog)
    ep, ed = engine_for(qp, gen, serving), engine_for(ad.query_for(case, case.decode, catalog), gen, serving)
    assert ep is not None and ed is not None
    work = prefill_work(ep, 1024)
    load = DecodeLoad(ed, 1024, 1024)
    gb = kv_gb_per_request(qp, serving)
    kv_s = serving.disagg_handoff_ms / 1000 + 20e-6 + gb / (900 * serving.link_eff)  # hand-off, latency, one GPU
    tpot = load.step_s(1)
    x = 4 / (work.latency_s + kv_s + 1023 * tpot)  # without the wait
    wait = mg1_wait_mean(x, [(1.0, work.service_s)])  # one prefill worker takes all of x

    answer = ad.predict(case, catalog)
    assert isinstance(answer, ad.LoopAnswer)
    assert answer.bound == ""
    assert answer.tpot_s == pytest.approx(tpot, rel=1e-9)  # batch just under 1: one sequence's step
    ttft = work.latency_s + kv_s + wait
    assert answer.decode_batch == pytest.approx((4 - x * ttft) / 4, rel=1e-3)  # the rest are in prefill
    assert answer.prefill_wait_s == pytest.approx(wait, rel=0.02)
    assert answer.ttft_s == pytest.approx(ttft, rel=1e-3)
    assert answer.requests_per_s == pytest.approx(x, rel=1e-3)
    # Little over the whole loop: the clients in prefill/transfer and decoding add up to 4
    assert answer.requests_per_s * (answer.ttft_s + 1023 * answer.tpot_s) == pytest.approx(4, rel=1e-6)


def test_a_prefill_bound_loop_queues_the_rest_in_front_of_prefill(catalog: Catalog) -> None:
    """Far more clients than one prefill worker serves: it runs at (nearly) 1 / service_s, the
    decode workers hold what Little gives at that rate, every other client waits for prefill."""
    work = ad.PrefillWork(latency_s=0.5, service_s=0.25)
    gen = catalog.efficiency.generations[catalog.gpus["H200-SXM"].generation]
    q = agg_query_for(Case("llama-3.1-70b", "H200-SXM", "fp8", 1024, 128, 8, 1, 1), catalog)
    ed = engine_for(q, gen, catalog.efficiency.serving)
    assert ed is not None
    load = DecodeLoad(ed, 1024, 128)
    answer = ad.closed_loop(1000, ad.Worker(8, 1, 1), ad.Worker(8, 1, 2), work, 0.01, load)
    assert answer.requests_per_s == pytest.approx(4.0, rel=0.01)  # 1 / 0.25 s
    assert answer.prefill_utilisation == pytest.approx(1.0, rel=0.01)
    b = load.batch(answer.requests_per_s / 2)
    assert b is not None and answer.decode_batch == pytest.approx(b)
    assert answer.ttft_s == pytest.approx((1000 - 2 * b) / answer.requests_per_s, rel=1e-6)
    assert answer.tpot_s == pytest.approx(load.step_s(b))
    # the wait never exceeds the other 999 prompts' service on the one worker
    assert answer.prefill_wait_s <= 999 * 0.25


def test_a_decode_bound_loop_spreads_the_wait_for_a_slot_over_the_tokens(catalog: Catalog) -> None:
    """Prefill is nearly free; decode workers fill to what they hold and the other clients wait
    for a slot, which stretches the time per output token (Little over the decode phase)."""
    gen = catalog.efficiency.generations[catalog.gpus["H200-SXM"].generation]
    q = agg_query_for(Case("llama-3.1-70b", "H200-SXM", "fp8", 1024, 128, 8, 1, 1), catalog)
    ed = engine_for(q, gen, catalog.efficiency.serving)
    assert ed is not None
    load = DecodeLoad(ed, 1024, 128)
    work = ad.PrefillWork(latency_s=0.01, service_s=1e-4)
    clients = 3 * load.max_running
    answer = ad.closed_loop(clients, ad.Worker(8, 1, 1), ad.Worker(8, 1, 1), work, 0.0, load)
    assert answer.bound == "decode"
    x = load.ceiling()
    assert answer.requests_per_s == pytest.approx(x)
    decoding = clients - x * answer.ttft_s
    assert answer.tpot_s == pytest.approx(decoding / x / 127, rel=1e-9)
    assert answer.tpot_s > 2.5 * load.step_s(load.max_running)  # about 3x the full batch's step
