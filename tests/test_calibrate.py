"""The calibration harness: every published row is modelled or skipped with a reason, by hand where it can be."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.catalog import load_catalog
from planner.cli import app
from planner.perf.calibration import (
    OPENORCA_INPUT_TOKENS,
    bundled_csv_text,
    evaluate_row,
    load_measurements,
    model_shape,
    parse_deployment,
    report_markdown,
    run_calibration,
)
from planner.perf.calibration import parse_measurements as _parse_text
from planner.perf.inference import estimate_inference
from planner.perf.inference_types import InferenceQuery
from planner.perf.links import link_for
from planner.perf.shapes import shape_of

DOCS = Path(__file__).resolve().parents[1] / "docs" / "calibration.md"


@pytest.fixture(scope="module")
def report():
    return run_calibration()


def _parse(text):
    return _parse_text(text, "test.csv")


def _row(report, row_id):
    return next(r for r in report.rows if r.id == row_id)


def test_every_row_is_predicted_or_skipped_with_a_reason(report):
    _, measurements = load_measurements()
    assert len(report.rows) == len(measurements) == 128
    for r in report.rows:
        assert (r.predicted is not None) != bool(r.skipped), r
        if r.predicted is not None:
            assert r.predicted > 0 and r.ratio is not None, r
            assert r.how, f"{r.id}: a prediction says how it was modelled"
    # Most rows are modelled; a mapping regression that silently skips them fails here.
    assert len(report.predicted) >= 100


def test_rows_off_catalog_are_skipped_as_such(report):
    """Gaudi2, GH200 and TPU rows are not bent onto a catalog GPU: 'no catalog GPU', counted."""
    for row_id in ("inf-013", "inf-019", "trn-081"):
        assert _row(report, row_id).skipped.startswith("no catalog GPU"), row_id


def test_batch1_decode_row_by_hand(report, catalog):
    """lmdeploy, Llama-2-7B fp16 on one A100, prompt 1 token, 128 out, batch 1: tokens/s = 1000 / TPOT.

    TPOT = weight + KV bytes / (bandwidth x eff) + step overhead + this request's prefill spread
    over its 128 output steps (a 1-token prefill reads the weights once).
    """
    r = _row(report, "inf-110")
    gpu = catalog.gpus["A100-SXM-80GB"]
    eff = catalog.efficiency.generations["ampere"]
    serving = catalog.efficiency.serving
    bw = 2039e9 * eff.bandwidth_eff
    flops = 312e12 * eff.compute_eff_for("fp16")
    weights = 6.74e9 * 2
    kv = (1 + 128 / 2) * 2 * 32 * 32 * 128 * 2  # mean context 65 tokens, MHA, 16-bit
    step = max((weights + kv) / bw, (2 * 6.74e9 + 4 * 32 * 65 * 4096) / flops) + serving.step_overhead_ms / 1e3
    prefill = max((2 * 6.74e9 + 2 * 32 * 4096) / flops, weights / bw)
    tpot_s = step + prefill / 128
    assert r.predicted == pytest.approx(1 / tpot_s, rel=1e-9)

    server = catalog.servers["hgx-a100-8gpu"]
    q = InferenceQuery(
        model=shape_of("llama-2-7b", catalog),
        gpu=gpu,
        gpus=1,
        precision="fp16",
        input_tokens=1,
        output_tokens=128,
        link=link_for(server, gpu, 1),
        concurrency=1,
    )
    est = estimate_inference(q, eff, serving)
    assert r.predicted == pytest.approx(1000 / est.tpot_ms, rel=1e-9)
    assert r.measured == 100.02


def test_mlperf_rows_use_the_dataset_means_and_the_log_of_their_own_submission(report):
    # The TTFT row of the B200 log carries no token count; the throughput row of the same log does (274).
    ttft = _row(report, "inf-039")
    assert f"input {OPENORCA_INPUT_TOKENS}, output 274" in ttft.how
    assert "TTFT<=2000 ms, TPOT<=200 ms" in ttft.how


def test_stated_batch_is_run_as_stated(report):
    how = _row(report, "inf-001").how
    assert "batch 896" in how and "capped" not in how


def test_stated_batch_above_the_model_limit_is_run_at_the_limit_and_said():
    """A batch whose KV cache cannot fit (70B bf16 on two 80 GB GPUs, 20k batch) is capped, and says so."""
    header, _ = bundled_csv_text().split("\n", 1)
    row = (
        'x-1,inference,test,Llama-2-70B,70,H100-SXM-80GB,2,FP16,test,1024,256,"batch 20000; TP2",'
        "output_tokens_per_s_total,1000,synthetic"
    )
    (m,) = [x for x in _parse(header + "\n" + row)]
    result = evaluate_row(load_catalog(), m)
    assert "batch 20000 capped at the model's limit" in result.how


@pytest.mark.parametrize(
    ("text", "tp", "replicas", "batch"),
    [
        ("4 instances x TP2; gpu_batch_size 896 (configs/llama2-70b/Offline)", 2, 4, 896),
        ("batch 1024; TP1", 1, None, 1024),
        ("TP1; server load", 1, None, None),
        ("n/a", None, None, None),
    ],
)
def test_parse_deployment(text, tp, replicas, batch):
    d = parse_deployment(text)
    assert (d.tp, d.replicas, d.batch) == (tp, replicas, batch)


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("LLaMA 7B", "llama-2-7b"),
        ("Llama-2-70B-Chat", "llama-2-70b"),
        ("LLAMA2-70B LoRA (SQuAD, packed 4096)", "llama-2-70b"),
        ("Meta-Llama-3.1-70B-Instruct-FP8", "llama-3.1-70b"),
        ("Llama 3 8B pretraining", "llama-3.1-8b"),
        ("GPT-J 6B (MLPerf gptj)", "gpt-j-6b"),
        ("GPT3-175B", "gpt-3-175b"),
        ("OPT-175B", "dense-175b"),  # not in the catalog: an inline dense model of params_b
    ],
)
def test_model_names_map_to_catalog_shapes(catalog, model, expected):
    _, measurements = load_measurements()
    m = next(x for x in measurements if x.model == model)
    assert model_shape(catalog, m).name == expected


def test_a_row_that_does_not_fit_says_so(catalog):
    """Llama 3 405B at 128K context: the model has no context parallelism, so it cannot fit."""
    _, measurements = load_measurements()
    m = next(x for x in measurements if x.id == "trn-080")
    assert evaluate_row(catalog, m).skipped.startswith("model infeasible")


def test_cli_prints_the_family_table():
    result = CliRunner().invoke(app, ["calibrate"])
    assert result.exit_code == 0, result.output
    assert "by family" in result.output
    for family in ("inference throughput", "inference TTFT", "inference TPOT", "training throughput", "overall"):
        assert family in result.output
    assert "worst rows" in result.output


def test_cli_json_and_markdown(tmp_path):
    md = tmp_path / "calibration.md"
    result = CliRunner().invoke(app, ["calibrate", "--json", "--markdown", str(md)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert {s["group"] for s in data["families"]} >= {"inference throughput", "training throughput", "overall"}
    assert len(data["rows"]) == 128
    assert md.read_text(encoding="utf-8").startswith("# Calibration")


def test_cli_other_table_and_bad_input(tmp_path):
    table = tmp_path / "mine.csv"
    table.write_text("\n".join(bundled_csv_text().splitlines()[:3]) + "\n")  # header and two rows
    ok = CliRunner().invoke(app, ["calibrate", "--csv", str(table), "--json"])
    assert ok.exit_code == 0, ok.output
    assert len(json.loads(ok.output)["rows"]) == 2

    table.write_text("id,value\nx,1\n")
    bad = CliRunner().invoke(app, ["calibrate", "--csv", str(table)])
    assert bad.exit_code == 2 and "missing column" in bad.output
    missing = CliRunner().invoke(app, ["calibrate", "--csv", str(tmp_path / "none.csv")])
    assert missing.exit_code == 2 and "file not found" in missing.output


def test_committed_report_is_current(report):
    """docs/calibration.md is what `planner calibrate` prints now: regenerate it after changing a factor."""
    assert DOCS.read_text(encoding="utf-8") == report_markdown(report), (
        "docs/calibration.md is stale: run `planner calibrate --markdown docs/calibration.md`"
    )


# The targets for the median error on the published measurements. A change
# to the physics or the efficiency factors that regresses past them fails here.
TARGETS = {
    "inference throughput": 0.15,
    "inference TTFT": 0.20,
    "inference TPOT": 0.20,
    "training throughput": 0.10,
}


@pytest.mark.parametrize(("family", "limit"), TARGETS.items())
def test_median_error_within_target(report, family, limit):
    from planner.perf.calibration import family_summaries

    summary = next(s for s in family_summaries(report) if s.group == family)
    assert summary.count >= 10
    assert summary.median_abs_error <= limit, f"{family}: median |error| {summary.median_abs_error:.1%} > {limit:.0%}"
    assert 1 - limit <= summary.median_ratio <= 1 + limit


def test_no_scenario_is_off_by_half(report):
    """Family medians can hide two opposite errors; every benchmark scenario stays within x1.5."""
    from planner.perf.calibration import scenario_summaries

    for s in scenario_summaries(report):
        assert 1 / 1.5 <= s.median_ratio <= 1.5, f"{s.group}: median ratio {s.median_ratio:.2f}"
