"""Dotted-path overrides of a problem file: `finance.budget_usd`, `catalog.prices_usd.H100-SXM`,
and list items by their name: `training.pretrain-3b.deadline_days`, `inference.chat.requests_per_s`."""

from __future__ import annotations

import copy
import itertools
import math
from typing import Any

from planner.errors import InputError
from planner.io.files import check_reference, excerpt
from planner.io.problem_io import LoadedProblem, parse_problem

LISTS = ("training", "inference")
REFERENCE_KEYS = frozenset({"csv"})  # keys whose value names a file (inside the problem's folder)


def parse_value(text: str, key: str = "--set") -> Any:
    """A command-line value as YAML would read it: numbers, booleans, null, lists, text.
    A number the problem file would refuse (`1:30` aside, which stays text) is refused here, naming ``key``."""
    from planner.io.yaml_io import NumberError, loads_yaml

    try:
        value, _ = loads_yaml(f"v: {text}", "--set")
    except NumberError as exc:
        raise InputError(exc.message, key=key, hint=exc.hint) from None
    except InputError:
        return text
    if not _finite(value["v"]):
        raise InputError(f"expected a finite number, got {excerpt(text)}", key=key)
    return value["v"]


def _finite(value: Any) -> bool:
    """No NaN or infinity anywhere in a value (a list or mapping included)."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    return True


def parse_set(option: str) -> tuple[str, list[Any]]:
    """``PATH=V1,V2`` -> (PATH, [V1, V2])."""
    if "=" not in option:
        raise InputError(f"expected PATH=V1,V2,..., got {excerpt(option)}", key="--set")
    raw_path, _, text = option.partition("=")
    path = raw_path.strip()
    items = [v.strip() for v in text.split(",") if v.strip()]
    if not path or not items:
        raise InputError(f"expected PATH=V1,V2,..., got {excerpt(option)}", key="--set")
    values = [parse_value(v, f"--set {path}") for v in items]
    for value in values:
        check_override_references(path, value, prefix="--set ")
    return path, values


def check_override_references(path: str, value: Any, file: str | None = None, prefix: str = "") -> None:
    """An override is part of the problem: a file it names must be a relative path that stays in the
    problem's folder (`--set inference.chat.mix.csv=/etc/passwd` is refused before anything is read)."""
    stack: list[tuple[str, Any]] = [(path, value)]
    while stack:
        where, node = stack.pop()
        if isinstance(node, dict):
            stack.extend((f"{where}.{k}", v) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((f"{where}[{i}]", v) for i, v in enumerate(node))
        elif where.rsplit(".", 1)[-1] in REFERENCE_KEYS:
            if not isinstance(node, str):
                raise InputError("expected the path of a file", file=file, key=prefix + where)
            check_reference(node, file=file, key=prefix + where)


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
    return parse_problem(data, base.lines, f"{base.file} [{label}]", base.folder)


def grid(sets: list[tuple[str, list[Any]]]) -> list[dict[str, Any]]:
    """Every combination of the swept values, in the order given."""
    paths = [p for p, _ in sets]
    return [dict(zip(paths, combo, strict=True)) for combo in itertools.product(*[v for _, v in sets])]
