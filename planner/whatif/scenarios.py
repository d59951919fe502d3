"""What-if variants: dotted-path overrides of a problem, and grids of them.

Paths are the ones the plan's constraints report: ``finance.budget_usd``,
``site.power_kw``, ``catalog.prices_usd.H100-SXM``, and list items by their
name: ``training.pretrain-3b.deadline_days``, ``inference.chat.requests_per_s``.
"""

from __future__ import annotations

import copy
import itertools
from typing import Any

from planner.errors import InputError
from planner.problem_io import LoadedProblem, parse_problem

LISTS = ("training", "inference")


def parse_value(text: str) -> Any:
    """A command-line value as YAML would read it: numbers, booleans, null, lists, text."""
    from planner.yaml_io import loads_yaml

    try:
        value, _ = loads_yaml(f"v: {text}", "--set")
    except InputError:
        return text
    return value["v"]


def parse_set(option: str) -> tuple[str, list[Any]]:
    """``PATH=V1,V2`` -> (PATH, [V1, V2])."""
    if "=" not in option:
        raise InputError(f"expected PATH=V1,V2,..., got {option!r}", key="--set")
    path, _, values = option.partition("=")
    items = [v.strip() for v in values.split(",") if v.strip()]
    if not path.strip() or not items:
        raise InputError(f"expected PATH=V1,V2,..., got {option!r}", key="--set")
    return path.strip(), [parse_value(v) for v in items]


def apply_override(data: dict[str, Any], path: str, value: Any) -> None:
    """Set ``path`` in the raw problem mapping (in place)."""
    parts = path.split(".")
    node: Any = data
    for i, part in enumerate(parts[:-1]):
        if isinstance(node, dict) and part in LISTS and i == 0:
            items = node.get(part) or []
            name = parts[i + 1] if i + 1 < len(parts) else ""
            # item names may contain dots: match the longest name that fits the path
            match = _named_item(items, parts[i + 1 :])
            if match is None:
                names = [str(x.get("name")) for x in items if isinstance(x, dict)]
                raise InputError(f"no {part} item named {name!r} (have: {', '.join(names)})", key=path)
            item, used = match
            rest = parts[i + 1 + used :]
            if not rest:
                raise InputError("a path must end at a key of the item", key=path)
            apply_override(item, ".".join(rest), value)
            return
        if isinstance(node, dict):
            node = node.setdefault(part, {})
        else:
            raise InputError(f"{'.'.join(parts[: i + 1])} is not a mapping", key=path)
    if not isinstance(node, dict):
        raise InputError(f"{'.'.join(parts[:-1])} is not a mapping", key=path)
    node[parts[-1]] = value


def _named_item(items: list[Any], parts: list[str]) -> tuple[dict[str, Any], int] | None:
    for used in range(len(parts) - 1, 0, -1):
        name = ".".join(parts[:used]).lower()
        for item in items:
            if isinstance(item, dict) and str(item.get("name", "")).lower() == name:
                return item, used
    return None


def variant(base: LoadedProblem, overrides: dict[str, Any]) -> LoadedProblem:
    data = copy.deepcopy(base.raw)
    for path, value in overrides.items():
        apply_override(data, path, value)
    label = ", ".join(f"{k}={v}" for k, v in overrides.items())
    return parse_problem(data, base.lines, f"{base.file} [{label}]")


def grid(sets: list[tuple[str, list[Any]]]) -> list[dict[str, Any]]:
    """Every combination of the swept values, in the order given."""
    paths = [p for p, _ in sets]
    return [dict(zip(paths, combo, strict=True)) for combo in itertools.product(*[v for _, v in sets])]


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
        "binding": " ".join(c.name for c in plan.constraints if c.binding),
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
    """What differs between plans, in words: the GPU mix, the binding limits, and the money."""
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
        if row.get("binding") != first.get("binding"):
            parts.append(f"binding: {row.get('binding') or 'none'} (was {first.get('binding') or 'none'})")
        for key in ("tco_usd", "capex_usd", "opex_usd_per_year"):
            a, b = row.get(key), first.get(key)
            if isinstance(a, (int, float)) and isinstance(b, (int, float)) and abs(a - b) >= 1:
                parts.append(f"{key} {a - b:+,.0f}")
        lines.append(f"{name} vs {base}: " + ("; ".join(parts) if parts else "the same plan"))
    return lines
