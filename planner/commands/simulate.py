"""`planner simulate`: replay each service's traffic through a plan's replicas and router.

Given a plan JSON (with ``--problem``, the problem it was solved for: the plan does not carry
model shapes, request sizes or targets) or a problem file (solved first, as `planner solve`
does). Exit 0 when every service's simulated p99 TTFT and TPOT are within target, 1 when one
is not (or no plan exists), 2 for bad input.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from planner.commands.common import out, user_errors, working
from planner.commands.signals import held
from planner.errors import InputError, PlannerError

if TYPE_CHECKING:
    from planner.catalog import Catalog
    from planner.io.problem_io import LoadedProblem
    from planner.schema.plan import Plan
    from planner.simulate.run import ServiceResult

MAX_REQUESTS = 10_000_000


@user_errors
def simulate(
    target: Annotated[Path, typer.Argument(help="a plan (JSON, from `planner solve --json`) or a problem (YAML)")],
    problem: Annotated[
        Path | None, typer.Option("--problem", help="the problem a plan JSON was solved for (its models and targets)")
    ] = None,
    requests: Annotated[int, typer.Option("--requests", min=1, max=MAX_REQUESTS, help="requests per service")] = 30_000,
    seed: Annotated[int, typer.Option("--seed", min=0, help="random seed (arrivals, sizes, routing)")] = 0,
    json_path: Annotated[str | None, typer.Option("--json", help="write the results as JSON ('-' for stdout)")] = None,
    router: Annotated[
        str,
        typer.Option(
            "--router",
            help="within a replica kind: random (Poisson per replica, as planned), least-outstanding or round-robin",
        ),
    ] = "random",
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers", min=1, help="processes: one service each, or one service's replicas (default: all cores)"
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no terminal table")] = False,
) -> None:
    """Simulate a plan's serving fleet iteration by iteration: p50/p90/p99 latency per service and bucket."""
    from planner.report.files import check_writable, write_all
    from planner.simulate.fleet import ROUTERS
    from planner.simulate.run import report_json, simulate_plan

    if router not in ROUTERS:
        raise InputError(f"unknown router {router!r}", key="--router", hint=f"one of {', '.join(ROUTERS)}")
    check_writable([], streams=[json_path])
    plan, loaded, catalog = _inputs(target, problem)
    started = time.perf_counter()
    with working(f"simulating {requests:,} requests per service"):
        results = simulate_plan(plan, loaded, catalog, requests, seed, workers or os.cpu_count() or 1, router)
    seconds = time.perf_counter() - started
    report = report_json(results, requests, seed, router)
    to_stdout = json_path == "-"
    if not quiet and not to_stdout:
        print_results(results, seconds)
    if json_path:
        with held():  # written whole or not at all
            write_all({json_path: json.dumps(report, indent=2) + "\n"})
    raise typer.Exit(0 if report["holds"] else 1)


def _inputs(target: Path, problem: Path | None) -> tuple[Plan, LoadedProblem, Catalog]:
    from planner.catalog import load_catalog
    from planner.io.catalog_refs import check_references
    from planner.io.problem_io import load_problem

    if target.suffix.lower() == ".json":
        if problem is None:
            raise InputError(
                "a plan does not carry its models, request sizes and targets",
                file=str(target),
                hint="give the problem it was solved for: --problem PROBLEM.yaml",
            )
        plan = _read_plan(target)
        loaded = load_problem(problem)
        catalog = load_catalog()
        check_references(loaded, catalog)
        return plan, loaded, catalog
    if problem is not None:
        raise InputError("--problem goes with a plan JSON; a problem file is solved first", file=str(problem))
    return _solve(target)


def _read_plan(path: Path) -> Plan:
    from pydantic import ValidationError

    from planner.io.files import loads_json, read_input_text
    from planner.io.kept_plan import MAX_PLAN_BYTES
    from planner.io.yaml_io import dotted_path
    from planner.schema.plan import Plan

    hint = "give a plan written by `planner solve --json`"
    text = read_input_text(path, "a plan written by `planner solve --json`", MAX_PLAN_BYTES)
    data = loads_json(text, str(path))
    try:
        return Plan.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise InputError(
            f"not a plan: {first['msg']}", file=str(path), key=dotted_path(tuple(first["loc"])) or None, hint=hint
        ) from None


def _solve(path: Path) -> tuple[Plan, LoadedProblem, Catalog]:
    from planner.context import prepare
    from planner.io.problem_io import load_problem
    from planner.perf.kept_estimates import kept_for
    from planner.pipeline import plan_context

    loaded = load_problem(path)
    with kept_for(path):
        ctx = prepare(loaded)
    with working("solving"):
        plan = plan_context(ctx)
    if plan.status == "infeasible":
        summary = plan.diagnosis.summary[0] if plan.diagnosis and plan.diagnosis.summary else ""
        raise PlannerError(f"no feasible plan to simulate ({summary or 'see planner solve'})")
    if plan.verification:
        raise PlannerError("the verifier rejected the plan (a bug: please report it); see planner solve")
    return plan, loaded, ctx.catalog


def _ms(value: object) -> str:
    if not isinstance(value, (int, float)):
        return "-"
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}"


def print_results(results: list[ServiceResult], seconds: float) -> None:
    from rich.markup import escape
    from rich.table import Table  # here: a solve imports this module, and the table costs 0.01 s

    table = Table(title="Simulated latency (ms; p99 against target, analytic p99 the plan carried)")
    for col in ("service", "requests", "TTFT p50", "TTFT p99", "target", "analytic", "TPOT p50", "TPOT p99"):
        table.add_column(col, justify="left" if col == "service" else "right")
    for col in ("target", "analytic", "e2e p99", "within SLO", "verdict"):
        table.add_column(col, justify="right")
    for r in results:
        row = r.row
        if r.holds is None:
            table.add_row(escape(r.name), "0", *["-"] * 11, f"skipped: {escape(str(row.get('skipped', '')))}")
            continue
        rows = [(escape(r.name), row)] + [(f"  {escape(b['bucket'])}", b) for b in r.buckets]
        for label, x in rows:
            is_service = x is row
            verdict = ("[green]holds[/green]" if r.holds else "[bold red]misses[/bold red]") if is_service else ""
            table.add_row(
                label,
                f"{x['requests']:,}",
                _ms(x["ttft_p50_ms"]),
                _ms(x["ttft_p99_ms"]),
                _ms(row["ttft_target_ms"]) if is_service else "",
                _ms(x["analytic_ttft_p99_ms"]),
                _ms(x["tpot_p50_ms"]),
                _ms(x["tpot_p99_ms"]),
                _ms(row["tpot_target_ms"]) if is_service else "",
                _ms(x["analytic_tpot_p99_ms"]),
                _ms(x["e2e_p99_ms"]),
                f"{x['slo_attainment']:.1%}" if x["slo_attainment"] is not None else "-",
                verdict,
            )
    out.print(table)
    total = sum(int(r.row.get("requests") or 0) for r in results)
    out.print(f"{total:,} requests simulated in {seconds:.1f} s")
