"""The command line: parse arguments, call the pipeline, print, choose the exit code.

Exit codes: 0 a plan was found; 1 no feasible plan exists; 2 the input is wrong.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape  # messages quote user input: "[red]" in a name is text, not a style

from planner.errors import CatalogError, InputError, PlannerError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="What GPUs, network and racks to buy, at the lowest multi-year cost, and why.",
)
estimate_app = typer.Typer(no_args_is_help=True, help="The performance model on its own.")
app.add_typer(estimate_app, name="estimate")

# Piped output gets a fixed width, so tables do not wrap at 80 columns in logs.
out = Console(highlight=False, width=None if sys.stdout.isatty() else 140)
err = Console(stderr=True, highlight=False)
F = TypeVar("F", bound=Callable[..., Any])


def user_errors(fn: F) -> F:
    """Users see one clear line and an exit code, never a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (InputError, CatalogError) as exc:
            err.print(f"[bold red]error:[/bold red] {escape(str(exc))}", markup=True, soft_wrap=True)
            raise typer.Exit(2) from None
        except PlannerError as exc:
            err.print(f"[bold red]error:[/bold red] {escape(str(exc))}", soft_wrap=True)
            raise typer.Exit(1) from None
        except OSError as exc:
            # A file the user named cannot be read or written (folder gone, no permission, disk
            # full) and no inner layer turned it into an InputError: still the user's input, exit 2.
            where = f"{exc.filename}: " if exc.filename else ""
            text = escape(f"{where}{exc.strerror or exc}")
            err.print(f"[bold red]error:[/bold red] {text}", markup=True, soft_wrap=True)
            raise typer.Exit(2) from None

    return wrapper  # type: ignore[return-value]


ProblemArg = Annotated[Path, typer.Argument(help="problem file (YAML)", show_default=False)]


@app.command()
@user_errors
def solve(
    problem: ProblemArg,
    json_path: Annotated[str | None, typer.Option("--json", help="write the plan as JSON ('-' for stdout)")] = None,
    csv_path: Annotated[Path | None, typer.Option("--csv", help="write the purchase list as CSV")] = None,
    xlsx_path: Annotated[Path | None, typer.Option("--xlsx", help="write the spreadsheet for finance")] = None,
    html_path: Annotated[Path | None, typer.Option("--html", help="write a self-contained HTML report")] = None,
    charts_dir: Annotated[
        Path | None,
        typer.Option("--charts", help="folder for PNG charts (TCO breakdown, cash flow, training schedule)"),
    ] = None,
    time_limit: Annotated[
        float | None, typer.Option("--time-limit", min=0.01, help="solver limit in deterministic seconds")
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no terminal summary")] = False,
    explain_plan: Annotated[
        bool, typer.Option("--explain", help="measure what each limit is worth, budget steps and a runner-up plan")
    ] = False,
    why_not: Annotated[
        list[str] | None, typer.Option("--why-not", help="GPU id (repeatable, or 'all'): the best plan using it")
    ] = None,
    keep: Annotated[
        Path | None,
        typer.Option("--keep", help="a previous plan (--json): its servers and racks are already bought and stay"),
    ] = None,
) -> None:
    """Find the lowest-TCO plan that meets every target and limit."""
    from planner.context import prepare
    from planner.io.kept_plan import kept_hardware
    from planner.io.problem_io import load_problem
    from planner.pipeline import plan_context
    from planner.report.files import check_writable, write_all
    from planner.report.tables import plan_json, purchase_csv
    from planner.report.terminal import print_infeasible, print_plan

    charts = [charts_dir / n for n in ("tco_breakdown.png", "cash_flow.png", "gantt.png")] if charts_dir else []
    files: list[str | Path] = [
        p for p in (csv_path, xlsx_path, html_path, None if json_path == "-" else json_path, *charts) if p
    ]
    check_writable(files)
    loaded = load_problem(problem)
    ctx = prepare(loaded)
    if keep is not None:
        ctx.kept = kept_hardware(str(keep), ctx.catalog)
    for gpu in why_not or []:
        if gpu.lower() != "all":
            ctx.catalog.gpu(gpu)  # an unknown name is an input error, before any solving
    plan = plan_context(ctx, time_limit)
    if plan.status != "infeasible" and (explain_plan or why_not):
        from planner.explain.marginal import explain

        with err.status("measuring what each limit is worth (solving again)"):
            explain(ctx, plan, time_limit, why_not)
    to_stdout = json_path == "-"
    if not quiet and not to_stdout:
        print_plan(plan, out)
    elif plan.status == "infeasible" and to_stdout:
        print_infeasible(plan, err)
    outputs: dict[str | Path, str | bytes] = {}
    if json_path and not to_stdout:
        outputs[json_path] = plan_json(plan)
    if csv_path:
        outputs[csv_path] = purchase_csv(plan)
    outputs.update(_finance_outputs(plan, xlsx_path, html_path, charts))
    write_all(outputs)
    if to_stdout:
        sys.stdout.write(plan_json(plan))
    if plan.verification:
        err.print("[bold red]internal error:[/bold red] the verifier rejected the plan (see above)")
        raise typer.Exit(3)
    raise typer.Exit(1 if plan.status == "infeasible" else 0)


def _finance_outputs(
    plan: Any, xlsx_path: Path | None, html_path: Path | None, charts: list[Path]
) -> dict[str | Path, str | bytes]:
    outputs: dict[str | Path, str | bytes] = {}
    if xlsx_path:
        from planner.report.xlsx import plan_xlsx

        outputs[xlsx_path] = plan_xlsx(plan)
    if html_path:
        from planner.report.html_report import plan_html

        outputs[html_path] = plan_html(plan)
    if charts and plan.status != "infeasible":
        from planner.report.charts import cash_flow_png, tco_breakdown_png

        outputs[charts[0]] = tco_breakdown_png(plan)
        outputs[charts[1]] = cash_flow_png(plan)
        if plan.training:  # the schedule, only when there is one
            from planner.report.gantt import gantt_png

            outputs[charts[2]] = gantt_png(plan)
    return outputs


@app.command()
@user_errors
def validate(problem: ProblemArg) -> None:
    """Check a problem file: schema, names, references. Exit 0 or 2."""
    from planner.catalog import load_catalog
    from planner.io.problem_io import check_references, load_problem

    loaded = load_problem(problem)
    check_references(loaded, load_catalog())
    p = loaded.problem
    out.print(f"{problem}: ok ({len(p.training)} training jobs, {len(p.inference)} inference services)")


@app.command()
def schema() -> None:
    """Print the JSON Schema of the problem file."""
    from planner.schema.problem import Problem

    sys.stdout.write(json.dumps(Problem.model_json_schema(), indent=2) + "\n")


@app.command()
@user_errors
def catalog(
    table: Annotated[str, typer.Argument(help="gpus | servers | fabrics | models")] = "gpus",
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """What the planner knows, with sources."""
    from planner.report.catalog_view import show_catalog

    show_catalog(table, as_json, out)


@app.command()
@user_errors
def options(
    problem: ProblemArg,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Per workload, every GPU option: feasible with its figures, or why not."""
    from planner.context import prepare
    from planner.io.problem_io import load_problem
    from planner.report.options_view import options_json, print_options

    ctx = prepare(load_problem(problem))
    if as_json:
        sys.stdout.write(json.dumps(options_json(ctx), indent=2) + "\n")
    else:
        print_options(ctx, out)


@app.command()
@user_errors
def whatif(
    problem: ProblemArg,
    sets: Annotated[
        list[str] | None, typer.Option("--set", help="PATH=V1,V2,... (repeatable), e.g. site.power_kw=100,200")
    ] = None,
    scenarios: Annotated[
        Path | None, typer.Option("--scenarios", help="YAML of named scenarios and Monte Carlo draws")
    ] = None,
    csv_path: Annotated[Path | None, typer.Option("--csv", help="write the grid as CSV")] = None,
    xlsx_path: Annotated[Path | None, typer.Option("--xlsx", help="write the grid (and the base plan) as XLSX")] = None,
    chart_path: Annotated[Path | None, typer.Option("--chart", help="PNG: TCO against the first swept value")] = None,
    time_limit: Annotated[float | None, typer.Option("--time-limit", min=0.01)] = None,
    workers: Annotated[
        int | None, typer.Option("--workers", min=1, help="worker processes (default: all cores)")
    ] = None,
    executor: Annotated[str, typer.Option("--executor", help="local (worker processes) or ray")] = "local",
    address: Annotated[str | None, typer.Option("--address", help="Ray cluster address (with --executor ray)")] = None,
) -> None:
    """Solve a grid of variants of a problem: one row per combination of the swept values."""
    from planner.io.overrides import grid, parse_set
    from planner.io.problem_io import load_problem
    from planner.report.files import check_writable, write_all
    from planner.report.grid_view import print_rows, rows_csv
    from planner.whatif.scenarios import run_grid

    check_writable([p for p in (csv_path, xlsx_path, chart_path) if p])
    if not sets and not scenarios:
        raise InputError("give --set PATH=V1,V2 (a grid) or --scenarios FILE", key="whatif")
    if scenarios:
        _run_scenarios(problem, scenarios, csv_path, time_limit, workers, executor, address)
        return
    parsed = [parse_set(s) for s in sets or []]
    loaded = load_problem(problem)
    total = len(grid(parsed))
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=err,
        transient=True,
    ) as bar:
        task = bar.add_task("solving variants", total=total)
        rows = run_grid(
            loaded, parsed, time_limit, lambda: bar.advance(task), workers or os.cpu_count() or 1, executor, address
        )
    print_rows(rows, out, f"what-if: {problem}")
    outputs: dict[str | Path, str | bytes] = {}
    if csv_path:
        outputs[csv_path] = rows_csv(rows)
    if chart_path:
        from planner.report.charts import sweep_png

        outputs[chart_path] = sweep_png(rows, [p for p, _ in parsed])
    if xlsx_path:
        from planner.pipeline import plan_problem
        from planner.report.xlsx import plan_xlsx

        outputs[xlsx_path] = plan_xlsx(plan_problem(loaded, time_limit), whatif=rows)
    write_all(outputs)


def _run_scenarios(
    problem: Path,
    scenarios: Path,
    csv_path: Path | None,
    time_limit: float | None,
    workers: int | None,
    executor: str = "local",
    address: str | None = None,
) -> None:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress

    from planner.io.problem_io import load_problem
    from planner.report.files import write_all
    from planner.report.grid_view import print_rows, rows_csv
    from planner.whatif.montecarlo import load_scenarios, run_scenarios

    spec = load_scenarios(str(scenarios))
    loaded = load_problem(problem)
    with Progress("{task.description}", BarColumn(), MofNCompleteColumn(), console=err, transient=True) as bar:
        task = bar.add_task("solving scenarios and draws", total=None)
        rows, mc = run_scenarios(
            loaded, spec, time_limit, workers or os.cpu_count() or 1, lambda: bar.advance(task), executor, address
        )
    print_rows(rows, out, f"scenarios: {problem}")
    if mc:
        print_rows(mc, out, "Monte Carlo: TCO of each candidate's hardware under the draws")
    if csv_path:
        write_all({csv_path: rows_csv(rows + [{"scenario": f"monte-carlo:{r['candidate']}", **r} for r in mc])})


@app.command()
@user_errors
def compare(
    problems: Annotated[list[Path], typer.Argument(help="problem files to plan side by side")],
    csv_path: Annotated[Path | None, typer.Option("--csv", help="write the comparison as CSV")] = None,
    time_limit: Annotated[float | None, typer.Option("--time-limit", min=0.01)] = None,
) -> None:
    """Plans side by side: mix, capex, opex per year, TCO, power, racks, binding limits."""
    from planner.io.problem_io import load_problem
    from planner.pipeline import plan_problem
    from planner.report.files import check_writable, write_all
    from planner.report.grid_view import print_rows, rows_csv
    from planner.whatif.scenarios import plan_summary

    if csv_path:
        check_writable([csv_path])
    loaded = [load_problem(p) for p in problems]  # every file is checked before any solve
    rows = []
    for path, lp in zip(problems, loaded, strict=True):
        rows.append({"problem": str(path), **plan_summary(plan_problem(lp, time_limit))})
    print_rows(rows, out, "comparison")
    from planner.whatif.scenarios import differences

    for line in differences(rows):
        out.print(line, markup=False)
    if csv_path:
        write_all({csv_path: rows_csv(rows)})


@app.command()
@user_errors
def calibrate(
    csv_path: Annotated[
        Path | None, typer.Option("--csv", help="measurement table (default: the bundled calibration/measured.csv)")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON: summaries and every row")] = False,
    markdown: Annotated[Path | None, typer.Option("--markdown", help="write the report as Markdown tables")] = None,
) -> None:
    """The performance model against published measurements: median and worst ratio per family."""
    from planner.perf.calibration import print_report, report_json, report_markdown, run_calibration
    from planner.report.files import check_writable, write_all

    if markdown:
        check_writable([markdown])
    report = run_calibration(csv_path)
    if markdown:
        write_all({markdown: report_markdown(report)})
    if as_json:
        sys.stdout.write(json.dumps(report_json(report), indent=2) + "\n")
    else:
        print_report(report, out)


@app.command("import-melange")
@user_errors
def import_melange(
    config: Annotated[Path, typer.Argument(help="Mélange solver config (JSON), e.g. melange/config/example.json")],
    output: Annotated[Path, typer.Option("--output", "-o", help="problem file to write (YAML)")],
    gpu: Annotated[
        list[str] | None, typer.Option("--gpu", help="NAME=ID: map a Mélange GPU name to a catalog id (repeatable)")
    ] = None,
    input_sizes: Annotated[
        str | None,
        typer.Option("--input-sizes", help="prompt tokens per row bucket, e.g. 25,100 (default: 25,100,250,...)"),
    ] = None,
    output_sizes: Annotated[
        str | None,
        typer.Option("--output-sizes", help="output tokens per column bucket (default: 25,100,250,...)"),
    ] = None,
    name: Annotated[str | None, typer.Option("--name", help="problem name (default: melange-<config name>)")] = None,
) -> None:
    """Convert a Mélange config (GPU costs, throughputs per request-size bucket) into a rent-only problem."""
    from planner.io.melange import import_config, parse_gpu_map, parse_sizes
    from planner.io.problem_io import loads_problem
    from planner.report.files import check_writable, write_all

    check_writable([output])
    imported = import_config(
        config,
        gpu_map=parse_gpu_map(gpu or []),
        input_sizes=parse_sizes(input_sizes, "--input-sizes"),
        output_sizes=parse_sizes(output_sizes, "--output-sizes"),
        name=name,
    )
    try:  # the planner must read what was written; a failure here is the converter's bug, not the user's
        loads_problem(imported.text, str(output))
    except InputError as exc:
        err.print(f"[bold yellow]warning:[/bold yellow] the problem written does not load: {escape(str(exc))}")
    write_all({output: imported.text})
    inst = imported.instance
    rows, cols = inst.shape
    out.print(
        f"{output}: {len(inst.gpus)} GPU types ({', '.join(f'{k} -> {v}' for k, v in imported.gpu_ids.items())}), "
        f"{len(inst.buckets())} of {rows}x{cols} buckets, {inst.total_request_rate:g} requests/s, "
        f"slice factor {inst.slice_factor}",
        markup=False,
    )


@estimate_app.command("inference")
@user_errors
def estimate_inference_cmd(
    gpu: Annotated[str, typer.Option(help="GPU id, e.g. H100-SXM")],
    model: Annotated[str | None, typer.Option(help="model name from catalogs/models.yaml")] = None,
    params_b: Annotated[float | None, typer.Option("--params-b", min=0.001, help="dense model of this size")] = None,
    gpus: Annotated[int, typer.Option(min=1, help="GPUs per replica (tensor parallel)")] = 1,
    precision: Annotated[str, typer.Option(help="fp32|bf16|fp16|fp8|int8|int4|fp4")] = "bf16",
    input_tokens: Annotated[int, typer.Option(min=1)] = 1024,
    output_tokens: Annotated[int, typer.Option(min=1)] = 256,
    concurrency: Annotated[int | None, typer.Option(min=1, help="fixed batch")] = None,
    tpot_ms: Annotated[float | None, typer.Option(min=0.001, help="largest batch meeting this TPOT")] = None,
    ttft_ms: Annotated[float | None, typer.Option(min=0.001, help="and this TTFT")] = None,
    server: Annotated[str | None, typer.Option(help="server chassis id (sets the GPU link)")] = None,
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
        concurrency=concurrency,
        tpot_ms=tpot_ms,
        ttft_ms=ttft_ms,
        server=server,
    )
    _print_result(result, as_json)


@estimate_app.command("training")
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


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)


if __name__ == "__main__":
    main()
