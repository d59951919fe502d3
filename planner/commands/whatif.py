"""`planner whatif` (a grid of variants, named scenarios, Monte Carlo draws) and `planner compare`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from planner.commands.common import ProblemArg, err, out, user_errors
from planner.commands.signals import held
from planner.errors import InputError


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
    from planner.executors import check_address
    from planner.io.overrides import grid, parse_set
    from planner.io.problem_io import load_problem
    from planner.perf.kept_estimates import kept_for
    from planner.report.files import check_writable, write_all
    from planner.report.grid_view import print_rows, rows_csv
    from planner.whatif.scenarios import run_grid

    check_writable([p for p in (csv_path, xlsx_path, chart_path) if p])
    if executor == "ray":
        check_address(address)  # a cluster that does not answer: exit 2 in seconds, before any work
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
        with kept_for(problem):  # the variants' estimates are mostly the file's own
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
    with held():  # Ctrl-C waits until every file is in place, or none is
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
    from planner.perf.kept_estimates import kept_for
    from planner.report.files import write_all
    from planner.report.grid_view import print_rows, rows_csv
    from planner.whatif.montecarlo import load_scenarios, run_scenarios

    spec = load_scenarios(str(scenarios))
    loaded = load_problem(problem)
    with Progress("{task.description}", BarColumn(), MofNCompleteColumn(), console=err, transient=True) as bar:
        task = bar.add_task("solving scenarios and draws", total=None)
        with kept_for(problem):  # the scenarios' estimates are mostly the file's own
            rows, mc = run_scenarios(
                loaded, spec, time_limit, workers or os.cpu_count() or 1, lambda: bar.advance(task), executor, address
            )
    print_rows(rows, out, f"scenarios: {problem}")
    if mc:
        print_rows(mc, out, "Monte Carlo: TCO of each candidate's hardware under the draws")
    if csv_path:
        write_all({csv_path: rows_csv(rows + [{"scenario": f"monte-carlo:{r['candidate']}", **r} for r in mc])})


@user_errors
def compare(
    problems: Annotated[list[Path], typer.Argument(help="problem files to plan side by side")],
    csv_path: Annotated[Path | None, typer.Option("--csv", help="write the comparison as CSV")] = None,
    time_limit: Annotated[float | None, typer.Option("--time-limit", min=0.01)] = None,
) -> None:
    """Plans side by side: mix, capex, opex per year, TCO, power, racks, tight limits."""
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
