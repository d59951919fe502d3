"""The performance model on its own: `planner estimate inference|training` and `planner calibrate`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from planner.commands.common import out, user_errors


@user_errors
def estimate_inference_cmd(
    gpu: Annotated[str, typer.Option(help="GPU id, e.g. H100-SXM")],
    model: Annotated[str | None, typer.Option(help="model name from catalogs/models.yaml")] = None,
    params_b: Annotated[float | None, typer.Option("--params-b", min=0.001, help="dense model of this size")] = None,
    gpus: Annotated[int, typer.Option(min=1, help="GPUs per replica (tensor parallel)")] = 1,
    precision: Annotated[str, typer.Option(help="fp32|bf16|fp16|fp8|int8|int4|fp4")] = "bf16",
    input_tokens: Annotated[int, typer.Option(min=1)] = 1024,
    output_tokens: Annotated[int, typer.Option(min=1)] = 256,
    concurrency: Annotated[
        int | None, typer.Option(min=1, help="a closed loop of N clients (how serving benchmarks measure)")
    ] = None,
    rate: Annotated[float | None, typer.Option(min=1e-9, help="Poisson arrivals, requests/s")] = None,
    batch: Annotated[int | None, typer.Option(min=1, help="a steady batch of N sequences (static batch)")] = None,
    tpot_ms: Annotated[float | None, typer.Option(min=0.001, help="largest load meeting this p99 TPOT")] = None,
    ttft_ms: Annotated[float | None, typer.Option(min=0.001, help="and this p99 TTFT")] = None,
    attention_dp: Annotated[
        int, typer.Option("--attention-dp", min=1, help="attention data-parallel groups (MoE wide EP)")
    ] = 1,
    server: Annotated[str | None, typer.Option(help="server chassis id (sets the GPU link)")] = None,
    prefix_shared_tokens: Annotated[
        int | None, typer.Option(min=1, help="prompt tokens shared by requests (prefix cache; with --prefix-hit-rate)")
    ] = None,
    prefix_hit_rate: Annotated[
        float | None, typer.Option(min=0.0, max=1.0, help="share of prompts whose shared prefix is cached")
    ] = None,
    draft_model: Annotated[str | None, typer.Option(help="speculative decoding with this draft model")] = None,
    mtp: Annotated[bool, typer.Option("--mtp", help="speculative decoding with the model's MTP heads")] = False,
    acceptance_rate: Annotated[
        float | None, typer.Option(min=0.0, max=1.0, help="chance each speculated token is accepted")
    ] = None,
    spec_tokens: Annotated[
        int | None, typer.Option(min=1, max=32, help="tokens speculated per step (default 4; MTP: 1)")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Throughput and latency of one replica."""
    from planner.perf.estimate import run_inference_estimate

    result = run_inference_estimate(
        gpu=gpu,
        model=model,
        params_b=params_b,
        gpus=gpus,
        precision=precision,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        clients=concurrency,
        rate=rate,
        concurrency=batch,
        tpot_ms=tpot_ms,
        ttft_ms=ttft_ms,
        server=server,
        attention_dp=attention_dp,
        prefix_shared_tokens=prefix_shared_tokens,
        prefix_hit_rate=prefix_hit_rate,
        draft_model=draft_model,
        mtp=mtp,
        acceptance_rate=acceptance_rate,
        speculated_tokens=spec_tokens,
    )
    _print_result(result, as_json)


@user_errors
def estimate_training_cmd(
    gpu: Annotated[str, typer.Option(help="GPU id, e.g. H100-SXM")],
    tokens: Annotated[float, typer.Option(min=1, help="tokens to train on")],
    model: Annotated[str | None, typer.Option(help="model name from catalogs/models.yaml")] = None,
    params_b: Annotated[float | None, typer.Option("--params-b", min=0.001, help="dense model of this size")] = None,
    gpus: Annotated[int, typer.Option(min=1, help="GPUs in the job")] = 8,
    precision: Annotated[str, typer.Option(help="bf16 | fp8")] = "bf16",
    method: Annotated[str, typer.Option(help="full | lora | qlora")] = "full",
    fabric: Annotated[str | None, typer.Option(help="scale-out fabric id (default: ib-ndr beyond one server)")] = None,
    seq_len: Annotated[int, typer.Option(min=1)] = 4096,
    server: Annotated[str | None, typer.Option(help="server chassis id")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Memory, time and MFU of one training job."""
    from planner.perf.estimate import run_training_estimate

    result = run_training_estimate(
        gpu=gpu,
        tokens=tokens,
        model=model,
        params_b=params_b,
        gpus=gpus,
        precision=precision,
        method=method,
        fabric=fabric,
        seq_len=seq_len,
        server=server,
    )
    _print_result(result, as_json)


def _print_result(result: dict[str, Any], as_json: bool) -> None:
    if as_json:
        sys.stdout.write(json.dumps(result, indent=2) + "\n")
        return
    for key, value in result.items():
        if isinstance(value, float):
            value = f"{value:,.4g}"
        out.print(f"{key:>28}: {value}")


@user_errors
def calibrate(
    csv_path: Annotated[
        Path | None, typer.Option("--csv", help="measurement table (default: the bundled calibration/measured.csv)")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON: summaries and every row")] = False,
    markdown: Annotated[Path | None, typer.Option("--markdown", help="write the report as Markdown tables")] = None,
    aic: Annotated[
        Path | None,
        typer.Option(
            "--aic",
            help="also report against aiconfigurator's silicon rows (aic_silicon.csv, not shipped: give its path), "
            "per model, GPU and concurrency band, beside a naive roofline",
        ),
    ] = None,
    aic_markdown: Annotated[
        Path | None, typer.Option("--aic-markdown", help="write the --aic report as Markdown (needs --aic)")
    ] = None,
) -> None:
    """The performance model against published measurements: median and worst ratio per family."""
    import datetime
    import shlex

    from planner.errors import InputError
    from planner.perf.calibration import aic as aic_check
    from planner.perf.calibration import print_report, report_json, report_markdown, run_calibration
    from planner.report.files import check_writable, write_all

    if aic_markdown and aic is None:
        raise InputError("--aic-markdown needs --aic PATH (the aiconfigurator table to report against)")
    outputs = [p for p in (markdown, aic_markdown) if p]
    if outputs:
        check_writable(outputs)
    aic_report = None
    if aic is not None:
        aic_report = aic_check.run_aic(aic)  # a missing or malformed table stops here (exit 2)
    report = run_calibration(csv_path)
    files: dict[str | Path, str | bytes] = {}
    if markdown:
        files[markdown] = report_markdown(report)
    if aic_markdown and aic_report is not None:
        command = shlex.join(["planner", "calibrate", "--aic", str(aic), "--aic-markdown", str(aic_markdown)])
        files[aic_markdown] = aic_check.markdown(aic_report, command, datetime.date.today())
    if files:
        write_all(files)
    if as_json:
        payload = report_json(report)
        if aic_report is not None:
            payload["aic"] = aic_check.report_json(aic_report)
        sys.stdout.write(json.dumps(payload, indent=2) + "\n")
        return
    print_report(report, out)
    if aic_report is not None:
        out.print()
        aic_check.print_report(aic_report, out)
