"""A previous plan's hardware, kept (``planner solve --keep PLAN.json``).

The plan file is read like every input (a regular file, bounded, UTF-8, JSON without NaN, huge
numbers or deep nesting: ``planner.io.files``) and its counts are checked: a hand-edited or forged
plan with negative or absurd counts is an input error naming the key.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from planner.bom import PoolKey
from planner.catalog import Catalog
from planner.errors import InputError
from planner.io.files import loads_json, read_input_text
from planner.io.yaml_io import dotted_path
from planner.schema.plan import Plan

MAX_PLAN_BYTES = 50_000_000
MAX_KEPT_SERVERS = 100_000  # per pool: more servers than any site the planner plans
MAX_KEPT_RACKS = 100_000  # the problem schema's limit on site.racks


def kept_hardware(plan_path: str, catalog: Catalog) -> dict[PoolKey, tuple[int, int]]:
    """Servers and racks a previous plan bought (``solve --keep PLAN.json``): they stay."""
    plan = read_plan(plan_path)
    kept: dict[PoolKey, tuple[int, int]] = {}
    for index, row in enumerate(plan.servers):
        where = f"servers[{index}]"
        if row.server not in catalog.servers or row.gpu not in catalog.gpus or row.fabric not in catalog.fabrics:
            raise InputError(
                f"the kept plan has {row.server}/{row.gpu}/{row.fabric}, which the catalog does not know",
                file=plan_path,
                key=where,
            )
        _check_count(row.count, MAX_KEPT_SERVERS, plan_path, f"{where}.count")
        _check_count(row.racks, MAX_KEPT_RACKS, plan_path, f"{where}.racks")
        key = PoolKey(row.server, row.gpu, row.fabric)
        servers, racks = kept.get(key, (0, 0))
        kept[key] = (servers + row.count, racks + row.racks)
        _check_count(kept[key][0], MAX_KEPT_SERVERS, plan_path, f"{where}.count", "in all rows of this pool")
        _check_count(kept[key][1], MAX_KEPT_RACKS, plan_path, f"{where}.racks", "in all rows of this pool")
    return kept


def read_plan(plan_path: str) -> Plan:
    """A plan written by ``planner solve --json``, or one InputError naming the file and key."""
    text = read_input_text(Path(plan_path), "a plan written by `planner solve --json`", MAX_PLAN_BYTES, key="--keep")
    try:
        data = loads_json(text, plan_path)
    except InputError as exc:
        raise InputError(exc.message, file=plan_path, key=exc.key or "--keep", line=exc.line, hint=_HINT) from None
    try:
        return Plan.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = dotted_path(tuple(err["loc"])) or "--keep"
        raise InputError(f"not a plan: {err['msg']}", file=plan_path, key=key, hint=_HINT) from None


_HINT = "--keep takes a plan written by `planner solve --json`"


def _check_count(value: int, limit: int, plan_path: str, key: str, scope: str = "") -> None:
    if not 0 <= value <= limit:
        what = f"must be between 0 and {limit:,}{' ' + scope if scope else ''}, got {value:,}"
        raise InputError(what, file=plan_path, key=key, hint=_HINT)
