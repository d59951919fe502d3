"""Why no plan exists: workloads nothing can serve, and how far each limit must move.

Each numeric limit is made elastic in turn (a bounded slack, minimised): the
answer "raise the budget to at least V" is exact in the model's integer units.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from planner import units as u
from planner.optimize.model import build
from planner.optimize.solve import solve
from planner.schema.plan import Diagnosis, FixRow

if TYPE_CHECKING:
    from planner.context import Context
    from planner.options.types import WorkloadOptions


def no_option_diagnosis(ctx: Context, empty: list[WorkloadOptions]) -> Diagnosis:
    lines = []
    for w in empty:
        what = "training job" if w.kind == "training" else "service"
        lines.append(f"{what} {w.name} ({w.label}): no GPU in the catalog can run it within its targets:")
        for gpu, reasons in sorted(w.reasons_by_gpu().items()):
            lines.append(f"  {gpu}: {_closest(reasons)}")
    names = [f"{'job' if w.kind == 'training' else 'service'}:{w.name}" for w in empty]
    return Diagnosis(summary=lines, conflict=names)


def _closest(reasons: list[str]) -> str:
    """The reason from the largest configuration tried (the last), plus a count."""
    more = f" (+{len(reasons) - 1} other configurations)" if len(reasons) > 1 else ""
    return reasons[-1] + more


def relaxable(ctx: Context) -> list[tuple[str, str, float | None]]:
    p = ctx.problem
    out: list[tuple[str, str, float | None]] = []
    if p.finance.budget_usd is not None:
        out.append(("budget", "finance.budget_usd", p.finance.budget_usd))
    if p.site.power_kw is not None:
        out.append(("site_power", "site.power_kw", p.site.power_kw))
    if p.site.racks is not None:
        out.append(("racks", "site.racks", float(p.site.racks)))
    for j in p.training:
        out.append((f"job:{j.name}:deadline", f"training.{j.name}.deadline_days", j.deadline_days))
    for s in p.inference:
        # the model's demand is the peak year; the fix is stated on that figure
        out.append(
            (f"service:{s.name}:rate", f"inference.{s.name}.requests_per_s", s.peak_requests_per_s(p.horizon_years))
        )
    return out


def _required(name: str, current: float, slack: int) -> float:
    """The limit value that the minimal slack implies, in the problem's own units."""
    if name == "budget":
        return math.floor(current) + slack
    if name == "site_power":
        return math.ceil((math.floor(current * 1000 * u.PUE_SCALE) + slack) / u.PUE_SCALE) / 1000
    if name == "racks":
        return current + slack
    if name.endswith(":deadline"):
        return (u.days_down(current) + slack) / u.TIME_PER_DAY
    return (u.rps_up(current) - slack) / u.RATE_PER_RPS  # a rate: lower the demand


def diagnose(ctx: Context, time_limit_s: float | None = None) -> Diagnosis:
    from dataclasses import replace

    from planner.options.build import build_options

    # With slower training sizes, a relaxed deadline can actually be used.
    ctx = replace(ctx, workloads=build_options(ctx.problem, ctx.catalog, slower=True))
    limits = relaxable(ctx)
    fixes: list[FixRow] = []
    for name, path, current in limits:
        b = build(ctx.problem, ctx.catalog, ctx.workloads, relax={name})
        b.model.clear_objective()
        b.model.minimize(b.slacks[name])
        s = solve(b.model, time_limit_s)
        if s.status == "optimal" and current is not None:
            fixes.append(
                FixRow(
                    constraint=name,
                    path=path,
                    current=current,
                    required=_required(name, current, s.value(b.slacks[name])),
                )
            )
    combined: list[FixRow] = []
    names = [n for n, _, _ in limits]
    if names:
        b = build(ctx.problem, ctx.catalog, ctx.workloads, relax=set(names))
        weights = {n: 1.0 / max(1.0, _scale(n, c)) for n, _, c in limits}
        b.model.clear_objective()
        b.model.minimize(sum(weights[n] * b.slacks[n] for n in names))
        s = solve(b.model, time_limit_s)
        if s.status in ("optimal", "feasible"):
            for name, path, current in limits:
                moved = s.value(b.slacks[name])
                if moved and current is not None:
                    combined.append(
                        FixRow(constraint=name, path=path, current=current, required=_required(name, current, moved))
                    )
    conflict = minimal_conflict(ctx, [n for n, _, _ in limits], time_limit_s)
    summary = ["No plan meets every requirement at once."]
    if conflict:
        summary.append("These requirements cannot hold together (each one matters): " + ", ".join(conflict))
    for f in fixes:
        summary.append(_sentence(f))
    if not fixes:
        summary.append("No single limit can be moved alone to make a plan possible.")
    if combined:
        summary.append("Cheapest combined move: " + "; ".join(_sentence(f, bare=True) for f in combined))
    return Diagnosis(summary=summary, conflict=conflict, fixes=fixes, combined_fix=combined)


def minimal_conflict(ctx: Context, names: list[str], time_limit_s: float | None = None) -> list[str]:
    """A smallest set of limits that cannot all hold (deletion filter: each member matters).

    A limit outside the set is lifted (an unbounded slack); dropping any member of
    the returned set makes a plan possible.
    """

    def infeasible(enforced: list[str]) -> bool:
        b = build(ctx.problem, ctx.catalog, ctx.workloads, relax=set(names) - set(enforced))
        b.model.clear_objective()
        return solve(b.model, time_limit_s).status == "infeasible"

    if not names or not infeasible(names):
        return []
    active = list(names)
    for name in names:
        trial = [n for n in active if n != name]
        if infeasible(trial):
            active = trial
    return active


def _scale(name: str, current: float | None) -> float:
    """The limit in model units, so a combined fix weighs each move relative to its limit."""
    c = current or 1.0
    if name == "site_power":
        return c * 1000 * u.PUE_SCALE
    if name.endswith(":deadline"):
        return c * u.TIME_PER_DAY
    if name.endswith(":rate"):
        return c * u.RATE_PER_RPS
    return c


def _sentence(f: FixRow, bare: bool = False) -> str:
    n, cur, req = f.constraint, f.current, f.required
    if n == "budget":
        text = f"raise the budget from ${cur:,.0f} to at least ${req:,.0f}"
    elif n == "site_power":
        text = f"raise site power from {cur:g} kW to at least {req:,.3f} kW"
    elif n == "racks":
        text = f"raise racks from {cur:g} to at least {req:g}"
    elif n.endswith(":deadline"):
        text = f"extend {n.split(':')[1]}'s deadline from {cur:g} to at least {req:g} days"
    else:
        text = f"lower {n.split(':')[1]}'s demand from {cur:g} to at most {req:g} requests/s"
    return text if bare else f"- {text}"
