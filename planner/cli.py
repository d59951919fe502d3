"""The command line: parse arguments, call the pipeline, print, choose the exit code.

Exit codes: 0 a plan was found; 1 no feasible plan exists; 2 the input is wrong; 3 no plan
within the time limit, feasibility unknown; 4 internal error (the verifier rejected the plan);
130 interrupted (143 on SIGTERM), nothing partial written (planner/commands/common.py).

This module holds the typer app, `solve` and the commands on one problem file (`validate`,
`schema`, `options`); the other commands live in `planner/commands/` and are registered on the
same app at the end of this file, in the order `planner --help` lists them.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from planner.commands.alternatives import alternatives
from planner.commands.common import ProblemArg, err, out, shows_status, user_errors, working
from planner.commands.inputs import catalog, import_melange
from planner.commands.only_command import only_command
from planner.commands.perf import calibrate, estimate_inference_cmd, estimate_training_cmd
from planner.commands.plugins import skip_scan
from planner.commands.signals import exit_code, held, route
from planner.commands.simulate import simulate
from planner.commands.whatif import compare, whatif
from planner.errors import OutOfTime

if TYPE_CHECKING:
    from planner.context import Context
    from planner.schema.plan import Plan
    from planner.simulate.speculate import Speculation

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="What GPUs, network and racks to buy, at the lowest multi-year cost, and why.",
)
EXIT_INTERNAL = 4  # the verifier rejected the plan: a bug, not the input

estimate_app = typer.Typer(no_args_is_help=True, help="The performance model on its own.")
app.add_typer(estimate_app, name="estimate")


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
    no_simulate: Annotated[
        bool, typer.Option("--no-simulate", help="skip checking the plan's serving latency by simulation")
    ] = False,
    size_by_simulation: Annotated[
        bool,
        typer.Option("--size-by-simulation", help="add replicas to services whose simulated p99 breaks a target"),
    ] = False,
    scenarios: Annotated[
        Path | None,
        typer.Option(
            "--scenarios", help="a scenario file: buy once for all its scenarios (two-stage), report VSS and EVPI"
        ),
    ] = None,
    risk: Annotated[
        str | None,
        typer.Option("--risk", help="with --scenarios: cvar:ALPHA:WEIGHT adds WEIGHT x CVaR_ALPHA of the TCO"),
    ] = None,
) -> None:
    """Find the lowest-TCO plan that meets every target and limit."""
    from planner.optimize.budget import run_budget
    from planner.report.files import check_writable, write_all
    from planner.simulate.speculate import Speculation

    charts = [charts_dir / n for n in ("tco_breakdown.png", "cash_flow.png", "gantt.png")] if charts_dir else []
    files: list[str | Path] = [
        p for p in (csv_path, xlsx_path, html_path, None if json_path == "-" else json_path, *charts) if p
    ]
    check_writable(files)
    two_stage = scenarios is not None or risk is not None
    early = None if no_simulate or two_stage else Speculation(seed=0)
    try:
        with run_budget(time_limit, alarm=True):  # the time limit bounds the whole run, not each solve
            if two_stage:
                plan, ctx = _two_stage(problem, scenarios, risk, keep, time_limit)
            else:
                summary = not quiet and json_path != "-"
                plan, ctx = _plan(problem, keep, why_not, time_limit, explain_plan or bool(why_not), early, summary)
        if not no_simulate and plan.status != "infeasible":
            plan, ctx = _simulate(ctx, plan, size_by_simulation, early)
    finally:
        if early is not None:
            early.cancel()  # a plan with no simulation, or an interrupted run: its worker ends
    with run_budget(time_limit, alarm=True):
        if plan.status != "infeasible" and (explain_plan or why_not):
            _explain(ctx, plan, time_limit, why_not)
    # only now: the plan's schema is built while the options' workers estimate (planner.pipeline),
    # not before they start
    from planner.report.tables import plan_json, purchase_csv

    to_stdout = json_path == "-"
    if not quiet and not to_stdout:
        from planner.report.terminal import print_plan

        print_plan(plan, out)
    elif plan.status == "infeasible" and to_stdout:
        from planner.report.terminal import print_infeasible

        print_infeasible(plan, err)
    outputs: dict[str | Path, str | bytes] = {}
    if json_path and not to_stdout:
        outputs[json_path] = plan_json(plan)
    if csv_path:
        outputs[csv_path] = purchase_csv(plan)
    outputs.update(_finance_outputs(plan, xlsx_path, html_path, charts))
    with held():  # Ctrl-C waits until every file is in place, or none is
        write_all(outputs)
    if to_stdout:
        sys.stdout.write(plan_json(plan))
    if plan.verification:
        err.print("[bold red]internal error:[/bold red] the verifier rejected the plan (see above)")
        raise typer.Exit(EXIT_INTERNAL)
    raise typer.Exit(1 if plan.status == "infeasible" else 0)


def _plan(
    problem: Path,
    keep: Path | None,
    why_not: list[str] | None,
    time_limit: float | None,
    keep_start: bool,
    early: Speculation | None,
    summary: bool = True,
) -> tuple[Plan, Context]:
    # No collection until the solver is imported (``_import_solver`` turns them on again): the
    # modules and the problem read until then live until exit, and the three collections among
    # them found nothing to free (0.013 s of `planner solve problems/startup.yaml`, measured)
    gc.disable()
    try:
        from planner.context import prepare
        from planner.io.problem_io import load_problem
        from planner.perf.kept_estimates import kept_for

        with kept_for(problem):  # the estimates of this file's last run
            ctx = prepare(load_problem(problem), meanwhile=lambda: _import_solver(summary))
    finally:
        gc.enable()  # if the problem was refused before
    from planner.pipeline import plan_context

    if keep is not None:
        from planner.io.kept_plan import kept_hardware  # the plan's schema: after the workers start

        ctx.kept = kept_hardware(str(keep), ctx.catalog)
    for gpu in why_not or []:
        if gpu.lower() != "all":
            ctx.catalog.gpu(gpu)  # an unknown name is an input error, before any solving
    # explanations' re-solves start from the plan; the first plan is simulated while the search goes on
    return plan_context(ctx, time_limit, keep_start, early), ctx


def _import_solver(summary: bool = True) -> None:
    """OR-Tools and the model's modules (a quarter of a second), imported while the options'
    workers estimate, and those of what follows the search (the simulation, the verifier, the
    report and its status line: 0.024 s that came after the first plan or after the search,
    with nothing beside them). The terminal summary's tables only for a run that prints it
    (``--quiet`` does not: 0.01 s). Then every object alive is frozen out of the collector's reach:
    the libraries' modules live until exit, and a full collection walking them costs more than
    the solve's own garbage. No collection runs during these imports either: their objects all
    live until exit, and collections found nothing to free in them but took 0.02-0.03 s of the
    1.26 s of `planner solve problems/startup.yaml` (measured)."""
    gc.disable()
    try:
        if shows_status():
            import rich.status  # noqa: F401

        import planner.pipeline
        import planner.report.tables
        import planner.simulate.check
        import planner.simulate.fleet
        import planner.verify

        if summary:
            import planner.report.terminal  # noqa: F401
    finally:
        gc.freeze()
        gc.enable()


def _two_stage(
    problem: Path, scenarios: Path | None, risk: str | None, keep: Path | None, time_limit: float | None
) -> tuple[Plan, Context]:
    from planner.context import prepare
    from planner.errors import InputError
    from planner.io.problem_io import load_problem
    from planner.whatif.montecarlo import load_scenarios
    from planner.whatif.two_stage import parse_risk, plan_under_uncertainty

    if scenarios is None:
        raise InputError("--risk needs --scenarios (a risk measure is over scenarios)", key="--risk")
    if keep is not None:
        raise InputError("--keep and --scenarios together are not supported", key="--keep")
    measure = parse_risk(risk)
    loaded = load_problem(problem)
    spec = load_scenarios(str(scenarios))
    with working(f"solving for {len(spec.scenarios) or 'the Monte Carlo'} scenarios (two-stage)"):
        plan = plan_under_uncertainty(loaded, spec, measure, time_limit)
    return plan, prepare(loaded)


def _simulate(ctx: Context, plan: Plan, size: bool, early: Speculation | None) -> tuple[Plan, Context]:
    """Check the plan's serving latency by simulation (and with ``size``, add replicas until it holds)."""
    from planner.simulate.check import check_by_simulation

    with working("checking serving latency by simulation"):
        return check_by_simulation(ctx, plan, size, workers=os.cpu_count() or 1, early=early)


def _explain(ctx: Context, plan: Plan, time_limit: float | None, why_not: list[str] | None) -> None:
    """Measure what each limit is worth; when the time limit cuts it short, the plan stands without it."""
    from planner.explain import explain
    from planner.optimize.budget import cuttable

    try:
        with working("measuring what each limit is worth (solving again)"), cuttable():
            explain(ctx, plan, time_limit, why_not)
    except OutOfTime:
        err.print("[bold yellow]warning:[/bold yellow] the time limit ran out while explaining; raise --time-limit")


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


@user_errors
def validate(problem: ProblemArg) -> None:
    """Check a problem file: schema, names, references. Exit 0 or 2."""
    from planner.catalog import load_catalog
    from planner.io.catalog_refs import check_references
    from planner.io.problem_io import load_problem

    loaded = load_problem(problem)
    check_references(loaded, load_catalog())
    p = loaded.problem
    out.print(f"{problem}: ok ({len(p.training)} training jobs, {len(p.inference)} inference services)")


@user_errors
def schema() -> None:
    """Print the JSON Schema of the problem file."""
    from planner.schema.problem import Problem

    sys.stdout.write(json.dumps(Problem.model_json_schema(), indent=2) + "\n")


@user_errors
def options(
    problem: ProblemArg,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Per workload, every GPU option: feasible with its figures, or why not."""
    from planner.context import prepare
    from planner.io.problem_io import load_problem
    from planner.perf.kept_estimates import kept_for
    from planner.report.options_view import options_json, print_options

    with kept_for(problem):
        ctx = prepare(load_problem(problem))
    if as_json:
        sys.stdout.write(json.dumps(options_json(ctx), indent=2) + "\n")
    else:
        print_options(ctx, out)


# The commands, in the order `planner --help` lists them.
app.command()(solve)
app.command()(validate)
app.command()(schema)
app.command()(catalog)
app.command()(options)
app.command()(whatif)
app.command()(compare)
app.command()(alternatives)
app.command()(simulate)
app.command()(calibrate)
app.command("import-melange")(import_melange)
estimate_app.command("inference")(estimate_inference_cmd)
estimate_app.command("training")(estimate_training_cmd)


def main() -> None:
    route()  # Ctrl-C and SIGTERM: see planner/commands/signals.py
    # pydantic looks for plugins in every installed distribution's entry points when the first
    # model class is made (the problem's schema, imported later): 7-13 ms of each run, measured on
    # startup, and the planner uses none. A value the user set is kept. With plugins off, its
    # loader's own import of importlib.metadata is skipped too (planner/commands/plugins.py).
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    skip_scan()
    try:
        with only_command(app, sys.argv[1:2]):
            app()
    except KeyboardInterrupt as exc:  # outside a command (typer itself): still 130 or 143
        code = exit_code(exc)
        err.print("interrupted" if code == 130 else "terminated", markup=False)
        sys.exit(code)


def entry() -> None:
    """The console script: ``main``, then out without tearing the interpreter down. The answer is
    written and flushed and the exit handlers have run; what is skipped is freeing OR-Tools,
    pandas and numpy module by module (0.15 s of the 2.3 s of `planner solve
    problems/startup.yaml`, measured)."""
    gc.set_threshold(20_000, 20, 20)  # a short run's young objects: fewer, larger collections
    try:
        main()
        code: object = 0
    except SystemExit as exc:
        code = exc.code
    if code is None:
        code = 0
    elif not isinstance(code, int):  # as the interpreter does with a message
        print(code, file=sys.stderr)
        code = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe has nothing more to take
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
