"""`planner alternatives`: plans about as cheap as the optimum with a different GPU mix.

Exit 0 with the table (and ``--json``); 1 when no feasible plan exists; 2 for bad input; 3
when the optimum itself is not found within the time limit.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer

from planner.commands.common import ProblemArg, err, out, user_errors
from planner.errors import InputError

if TYPE_CHECKING:
    from rich.console import Console


def parse_share(text: str) -> float:
    """``5%`` or ``0.05`` as a share; an ``InputError`` naming ``--within`` otherwise."""
    raw = text.strip()
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        raise InputError(f"not a share: {text!r}", key="--within", hint="e.g. 5% or 0.05") from None
    if not 0 <= value <= 10:
        raise InputError(f"{text!r} is outside 0%-1000%", key="--within", hint="e.g. 5% or 0.05")
    return value


@user_errors
def alternatives(
    problem: ProblemArg,
    within: Annotated[str, typer.Option("--within", help="TCO tolerance over the optimum: 5% or 0.05")] = "5%",
    count: Annotated[int, typer.Option("-n", "--count", min=1, max=50, help="at most this many alternatives")] = 4,
    json_path: Annotated[
        str | None, typer.Option("--json", help="write the alternatives as JSON ('-' for stdout)")
    ] = None,
    time_limit: Annotated[
        float | None, typer.Option("--time-limit", min=0.01, help="solver limit per solve, deterministic seconds")
    ] = None,
) -> None:
    """Plans within a TCO tolerance of the optimum whose GPU mix differs (cheapest first)."""
    from planner.commands.signals import held
    from planner.context import prepare
    from planner.explain.mga import alternatives as find
    from planner.io.problem_io import load_problem
    from planner.perf.kept_estimates import kept_for
    from planner.pipeline import plan_context
    from planner.report.files import check_writable, write_all

    share = parse_share(within)
    check_writable([], [json_path])
    with kept_for(problem):
        ctx = prepare(load_problem(problem))
    optimum = plan_context(ctx, time_limit, keep_start=True)  # the alternatives' solves start from it
    if optimum.status == "infeasible":
        err.print("no feasible plan: nothing to compare (see `planner solve` for the diagnosis)", markup=False)
        raise typer.Exit(1)
    found = find(ctx, optimum, share, count, time_limit)
    report = {
        "optimal_tco_usd": optimum.tco_usd,
        "optimal_gpus": dict(sorted(optimum.gpus.items())),
        "within_share": share,
        "alternatives": [a.to_json() for a in found],
    }
    if json_path != "-":
        _print(report, share, out)
    text = json.dumps(report, indent=2) + "\n"
    with held():
        write_all({json_path: text} if json_path else {})
    if any(a.verification for a in found):
        err.print("[bold red]internal error:[/bold red] the verifier rejected an alternative")
        raise typer.Exit(4)


def _print(report: dict[str, object], share: float, console: Console) -> None:
    alts = report["alternatives"]
    assert isinstance(alts, list)
    optimum = report["optimal_tco_usd"]
    assert isinstance(optimum, float | int)
    gpus = report["optimal_gpus"]
    assert isinstance(gpus, dict)
    mix = ", ".join(f"{n} x {g}" for g, n in gpus.items())
    console.print(f"Optimum: ${optimum:,.0f} ({mix})", markup=False)
    if not alts:
        console.print(f"No plan with another GPU mix within {100 * share:g}% of it.", markup=False)
        return
    from rich.table import Table  # here: a solve imports this module, and the table costs 0.01 s

    t = Table(title=f"Plans within {100 * share:g}% of the optimum, another GPU mix each", title_justify="left")
    for col in ("#", "TCO", "vs optimum", "GPUs", "differs", "tight limits"):
        t.add_column(col)
    for i, a in enumerate(alts, 1):
        t.add_row(
            str(i),
            f"${a['tco_usd']:,.0f}",
            f"+{100 * a['delta_share']:.2f}%",
            ", ".join(f"{n} x {g}" for g, n in a["gpus"].items()),
            a["differs"],
            ", ".join(a["binding"]) or "-",
        )
    console.print(t)
