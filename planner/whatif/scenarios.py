"""What-if grids: every variant of a problem solved (in worker processes), one summary row
each, and what differs between two plans. The overrides themselves: ``planner.io.overrides``."""

from __future__ import annotations

from typing import Any

from planner.errors import InputError
from planner.io.overrides import grid, variant
from planner.io.problem_io import LoadedProblem


def plan_summary(plan: Any) -> dict[str, Any]:
    """The columns a what-if or comparison row shows for one plan."""
    row: dict[str, Any] = {
        "status": plan.status,
        "tco_usd": round(plan.tco_usd, 2) if plan.status != "infeasible" else None,
        "capex_usd": round(plan.capex_usd, 2) if plan.status != "infeasible" else None,
        "opex_usd_per_year": round(plan.opex_usd_per_year, 2) if plan.status != "infeasible" else None,
        "facility_power_kw": plan.facility_power_kw if plan.status != "infeasible" else None,
        "racks": plan.racks if plan.status != "infeasible" else None,
        "gpus": " + ".join(f"{n}x {g}" for g, n in plan.gpus.items()),
        # limits with less than one purchase unit of slack; what binds takes a re-solve (--explain)
        "tight": " ".join(c.name for c in plan.constraints if c.tight),
        "reason": "",
    }
    if plan.status == "infeasible" and plan.diagnosis:
        row["reason"] = " ".join(plan.diagnosis.summary[1:3]).replace("- ", "")
    return row


def solve_variant(base: LoadedProblem, overrides: dict[str, Any], time_limit_s: float | None) -> dict[str, Any]:
    """One row of a grid: the swept values and the plan's summary, or the reason there is none."""
    from planner.errors import PlannerError
    from planner.pipeline import plan_problem

    row: dict[str, Any] = dict(overrides)
    try:
        row.update(plan_summary(plan_problem(variant(base, overrides), time_limit_s)))
    except InputError as exc:
        row.update(status="error", reason=exc.message if not exc.key else f"{exc.key}: {exc.message}")
    except PlannerError as exc:
        row.update(status="error", reason=str(exc))
    return row


def _solve_in_worker(job: tuple[LoadedProblem, dict[str, Any], float | None]) -> dict[str, Any]:
    return solve_variant(*job)


def run_grid(
    base: LoadedProblem,
    sets: list[tuple[str, list[Any]]],
    time_limit_s: float | None = None,
    progress: Any = None,
    workers: int = 1,
    executor: str = "local",
    address: str | None = None,
) -> list[dict[str, Any]]:
    """Solve every variant; a variant that fails is a row with its reason, not a crash.

    Variants run in worker processes (``workers``) or on Ray (``executor="ray"``).
    Each solve is deterministic on its own and rows come back in grid order, so the
    table is the same whatever ran it.
    """
    from planner.executors import map_ordered

    jobs = [(base, overrides, time_limit_s) for overrides in grid(sets)]
    return map_ordered(_solve_in_worker, jobs, workers, executor, address, progress)


def differences(rows: list[dict[str, Any]], label: str = "problem") -> list[str]:
    """What differs between plans, in words: the GPU mix, the tight limits, and the money."""
    if len(rows) < 2:
        return []
    first = rows[0]
    lines = []
    for row in rows[1:]:
        name, base = row.get(label), first.get(label)
        if row.get("status") == "infeasible" or first.get("status") == "infeasible":
            lines.append(f"{name} vs {base}: {row.get('status')} vs {first.get('status')}")
            continue
        parts = []
        if row.get("gpus") != first.get("gpus"):
            parts.append(f"buys {row.get('gpus') or 'nothing'} instead of {first.get('gpus') or 'nothing'}")
        if row.get("tight") != first.get("tight"):
            parts.append(f"tight: {row.get('tight') or 'none'} (was {first.get('tight') or 'none'})")
        for key in ("tco_usd", "capex_usd", "opex_usd_per_year"):
            a, b = row.get(key), first.get(key)
            if isinstance(a, (int, float)) and isinstance(b, (int, float)) and abs(a - b) >= 1:
                parts.append(f"{key} {a - b:+,.0f}")
        lines.append(f"{name} vs {base}: " + ("; ".join(parts) if parts else "the same plan"))
    return lines
