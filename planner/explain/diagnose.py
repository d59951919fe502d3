"""Why no plan exists: workloads nothing can serve, and how far each limit must move.

Each numeric limit is made elastic in turn (a bounded slack, minimised): the
answer "raise the budget to at least V" is exact in the model's integer units.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from planner.limits.base import Family, Limit
from planner.limits.table import every_limit
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


def relaxable(ctx: Context) -> list[tuple[Family, Limit]]:
    """The limits a diagnosis may move: the table's elastic ones."""
    return [(fam, lim) for fam, lim in every_limit(ctx.problem, ctx.catalog) if lim.elastic]


def diagnose(ctx: Context, time_limit_s: float | None = None) -> Diagnosis:
    from dataclasses import replace

    from planner.options.build import build_options

    # With slower training sizes, a relaxed deadline can actually be used.
    ctx = replace(ctx, workloads=build_options(ctx.problem, ctx.catalog, slower=True))
    limits = relaxable(ctx)
    fixes: list[FixRow] = []
    for fam, lim in limits:
        b = build(ctx.problem, ctx.catalog, ctx.workloads, relax={lim.name}, kept=ctx.kept)
        b.model.clear_objective()
        b.model.minimize(b.slacks[lim.name])
        s = solve(b.model, time_limit_s)
        if s.status == "optimal":
            fixes.append(_fix(fam, lim, s.value(b.slacks[lim.name])))
    combined: list[FixRow] = []
    if limits:
        b = build(ctx.problem, ctx.catalog, ctx.workloads, relax={lim.name for _, lim in limits}, kept=ctx.kept)
        # each move weighed relative to its limit (model units per unit of the limit's value)
        weights = {lim.name: 1.0 / max(1.0, fam.scale(lim) * (lim.value or 1.0)) for fam, lim in limits}
        b.model.clear_objective()
        b.model.minimize(sum(weights[n] * b.slacks[n] for n in weights))
        s = solve(b.model, time_limit_s)
        if s.status in ("optimal", "feasible"):
            combined = [
                _fix(fam, lim, s.value(b.slacks[lim.name])) for fam, lim in limits if s.value(b.slacks[lim.name])
            ]
    conflict = minimal_conflict(ctx, [lim.name for _, lim in limits], time_limit_s)
    summary = ["No plan meets every requirement at once."]
    if conflict:
        summary.append("These requirements cannot hold together (each one matters): " + ", ".join(conflict))
    sentences = {lim.name: (fam, lim) for fam, lim in limits}
    for f in fixes:
        summary.append("- " + _sentence(sentences, f))
    if not fixes:
        summary.append("No single limit can be moved alone to make a plan possible.")
    if combined:
        summary.append("Cheapest combined move: " + "; ".join(_sentence(sentences, f) for f in combined))
    return Diagnosis(summary=summary, conflict=conflict, fixes=fixes, combined_fix=combined)


def minimal_conflict(ctx: Context, names: list[str], time_limit_s: float | None = None) -> list[str]:
    """A smallest set of limits that cannot all hold (deletion filter: each member matters).

    A limit outside the set is lifted (an unbounded slack); dropping any member of
    the returned set makes a plan possible.
    """

    def infeasible(enforced: list[str]) -> bool:
        b = build(ctx.problem, ctx.catalog, ctx.workloads, relax=set(names) - set(enforced), kept=ctx.kept)
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


def _fix(fam: Family, lim: Limit, slack: int) -> FixRow:
    return FixRow(constraint=lim.name, path=lim.path or "", current=lim.value, required=fam.required(lim, slack))


def _sentence(by_name: dict[str, tuple[Family, Limit]], f: FixRow) -> str:
    fam, lim = by_name[f.constraint]
    return fam.sentence(lim, f.required if f.required is not None else lim.value)
