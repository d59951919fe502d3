"""Break ties between plans of equal TCO the same way every time.

Equal-cost plans exist (cpsat-notes), and which one a solve returns depends on the
search. After the TCO solve, a copy of the model gets ``tco <= found x (1 + tolerance)``
(``policy.simplicity_tolerance``: what a simpler fleet is worth) and is solved again, from
the first plan as a hint, for, in this order:

1. fewer GPU vendors, then fewer distinct GPU types bought (owned);
2. the least TCO among those (with no tolerance: equal to the first's);
3. less IT power (watts);
4. training jobs as early as their start is free (sum of start times).

The three levels are one weighted integer objective, each weight larger than the
whole range of the levels below it, so a level always dominates the next. When the
weights would not fit comfortably in an int64 (nor in a double, which is how CP-SAT
reports objectives), the levels are solved in stages instead, each pinned before the
next. TCO never gets worse: for a proven optimum the optimum itself is pinned.

The copy keeps the original's variable indices (new variables come after them), and
a solver's values are by index, so the returned solver answers for the original
``Built`` variables.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from ortools.sat.python import cp_model, cp_model_helper

from planner.optimize.built import Built, Expr, upper
from planner.optimize.solve import WORKERS, Solved, _hint_from, _run, presolve_passes, set_hint, solve

TIE_LIMIT = 2.0  # deterministic seconds per re-solve
SAFE_RANGE = 2**53  # largest weighted objective solved in one stage (exact as a double)


@dataclass(frozen=True)
class Level:
    name: str
    expr: Expr
    lo: int
    hi: int
    own_stage: bool = False  # solved alone: its expression's own range could overflow a weighted sum


def solve_built(b: Built, time_limit_s: float | None = None) -> Solved:
    """Solve for the least TCO, then break ties (the plan a user gets). A time limit
    below ``TIE_LIMIT`` caps each tie-breaking stage too."""
    return break_ties(b, solve(b.model, time_limit_s), min(TIE_LIMIT, time_limit_s or TIE_LIMIT))


def break_ties(b: Built, first: Solved, limit: float = TIE_LIMIT) -> Solved:
    """The plan of ``first`` or one no costlier that wins the tie-breakers.

    ``objective`` is the TCO of the returned plan, ``bound`` the first solve's;
    ``value()`` reads the original model's variables. Without a plan, ``first``.
    """
    if first.status not in ("optimal", "feasible"):
        return first
    start = time.perf_counter()
    model = b.model.clone()
    _hint_from(model, first.solver)  # before any new variable: the hint covers them all
    cheapest = first.value(b.tco)
    model.add(b.tco <= math.floor(cheapest * (1 + b.simplicity_tolerance))).with_name("tiebreak:tco")
    levels = tie_levels(b, model, first)
    hint = model.proto.solution_hint  # the first plan, new variables included
    first_hint = dict(zip(hint.vars, hint.values, strict=True))
    first_at = {lv.name: _at(first_hint, lv.expr) for lv in levels}  # its value on each level
    solver = first.solver
    proven = first.status == "optimal"
    first_best = proven  # the first plan is also best on every stage so far
    for stage in stages(levels):
        objective = sum(w * lv.expr for w, lv in stage)
        if [lv.name for _, lv in stage] == ["vendors", "gpu_types"] and _fewest_possible(b, first_at):
            # one vendor and one GPU type, and every plan owns GPUs: no plan has fewer, so the
            # first plan is this stage's optimum (startup and most small problems: a solve saved)
            model.add(objective <= sum(w * first_at[lv.name] for w, lv in stage))
            continue
        if first_best and [lv.name for _, lv in stage] == ["tco"]:
            # the proven least TCO, and the first plan meets every stage before: it is this
            # stage's optimum too, no solve needed (startup: one of its three tie-break solves)
            model.add(b.tco <= cheapest)
            solver = first.solver  # it answers for the original variables, all the caller reads
            set_hint(model, first_hint.keys(), first_hint.values())
            continue
        model.minimize(objective)
        # No probing: it can spend the whole limit in presolve on a large model (measured:
        # stopped after presolve at 2 s), and the search starts from a complete hint. One presolve
        # pass on a small model, as its first solve: startup's tie-break 0.068 -> 0.044 s.
        found = _run(model, limit, WORKERS, probing=0, presolve_passes=presolve_passes(model))
        proven = proven and found.status == "optimal"
        if found.status not in ("optimal", "feasible"):
            break  # keep what the previous stage (or the first solve) found
        solver = found.solver
        first_best = first_best and sum(w * first_at[lv.name] for w, lv in stage) == found.value(objective)
        model.add(objective <= found.value(objective))
        _hint_from(model, solver)
    return Solved(
        status=first.status,
        solver=solver,
        objective=float(solver.value(b.tco)),
        bound=first.bound,
        seconds=first.seconds + time.perf_counter() - start,
        cheapest=first.objective,
        cheapest_gpu_types=sum(first.value(f) for f in b.gpu_type_used.values()),
        ties_proven=proven,
        cheapest_capex=first.value(b.capex),
    )


def _fewest_possible(b: Built, first_at: dict[str, int]) -> bool:
    """Whether the first plan's one vendor and one GPU type are the least any plan has: some
    workload can only run on owned GPUs (no cloud option), so every plan owns a type."""
    if first_at["vendors"] != 1 or first_at["gpu_types"] != 1:
        return False
    jobs = [[o for o, _ in xs] for xs in b.train.values()]
    services = [[o for o, _ in rs] for rs in b.serve.values()]
    return any(options and all(o.rent_usd_per_gpu_hour is None for o in options) for options in jobs + services)


def tie_levels(b: Built, model: cp_model.CpModel, first: Solved) -> list[Level]:
    """The tie-breakers as expressions over ``model`` (a copy of ``b.model``), most
    important first, with their bounds. Adds one Boolean per GPU vendor, hinted from ``first``."""
    used = list(b.gpu_type_used.values())  # the model's own: hinted with the rest
    vendors = []
    for vendor in sorted(set(b.gpu_vendor.values())):
        flag = model.new_bool_var(f"tiebreak:vendor_used[{vendor}]")
        for gpu, type_flag in b.gpu_type_used.items():
            if b.gpu_vendor[gpu] == vendor:
                model.add_implication(type_flag, flag)
        model.add_hint(flag, any(first.value(f) for g, f in b.gpu_type_used.items() if b.gpu_vendor[g] == vendor))
        vendors.append(flag)
    starts = list(b.starts.values())
    levels = [Level("vendors", sum(vendors), 0, len(vendors)), Level("gpu_types", sum(used), 0, len(used))]
    if b.simplicity_tolerance > 0:  # within the tolerance: the cheapest of the simplest
        top = math.floor(first.value(b.tco) * (1 + b.simplicity_tolerance))
        levels.append(Level("tco", b.tco, min(top, math.floor(first.bound)), top, own_stage=True))
    return [
        *levels,
        Level("it_power_w", b.it_power_w, *expr_bounds(b.it_power_w)),
        Level("start_times", sum(starts), sum(lower(s) for s in starts), sum(upper(s) for s in starts)),
    ]


def stages(levels: list[Level]) -> list[list[tuple[int, Level]]]:
    """Weighted groups of levels, solved one after the other.

    Within a group, a level's weight is one more than the largest total the levels
    after it can vary by, so one unit of it outweighs all of them. A group closes
    when adding the next level would take its range past ``SAFE_RANGE``. Levels that
    cannot vary are left out.
    """
    out: list[list[tuple[int, Level]]] = []
    group: list[Level] = []
    for lv in (lv for lv in levels if lv.hi > lv.lo):
        if group and (lv.own_stage or group[-1].own_stage or _span([*group, lv]) >= SAFE_RANGE):
            out.append(_weighted(group))
            group = []
        group.append(lv)
    if group:
        out.append(_weighted(group))
    return out


def _weighted(group: list[Level]) -> list[tuple[int, Level]]:
    weights, below = [], 0
    for lv in reversed(group):
        weights.append(below + 1)
        below += (below + 1) * (lv.hi - lv.lo)
    return list(zip(reversed(weights), group, strict=True))


def _span(group: list[Level]) -> int:
    """Largest absolute value the group's weighted objective can take (the int64 check)."""
    return sum(w * max(abs(lv.lo), abs(lv.hi)) for w, lv in _weighted(group))


def _at(values: dict[int, int], expr: Expr) -> int:
    """A linear expression's value at ``values`` (by variable index; they cover every variable)."""
    if isinstance(expr, int):
        return expr
    flat = cp_model_helper.FlatIntExpr(expr)
    return int(flat.offset + sum(c * values[v.index] for v, c in zip(flat.vars, flat.coeffs, strict=True)))


def lower(var: cp_model.IntVar) -> int:
    return int(var.proto.domain[0])


def expr_bounds(expr: Expr) -> tuple[int, int]:
    """Smallest and largest value of a linear expression over its variables' domains."""
    if isinstance(expr, int):
        return expr, expr
    flat = cp_model_helper.FlatIntExpr(expr)
    lo = hi = flat.offset
    for var, c in zip(flat.vars, flat.coeffs, strict=True):
        a, z = c * lower(var), c * upper(var)
        lo, hi = lo + min(a, z), hi + max(a, z)
    return lo, hi
