"""A previous plan's hardware, kept (``planner solve --keep PLAN.json``)."""

from __future__ import annotations

import json
from pathlib import Path

from planner.bom import PoolKey
from planner.catalog import Catalog
from planner.errors import InputError
from planner.schema.plan import Plan


def kept_hardware(plan_path: str, catalog: Catalog) -> dict[PoolKey, tuple[int, int]]:
    """Servers and racks a previous plan bought (``solve --keep PLAN.json``): they stay."""

    try:
        plan = Plan.model_validate(json.loads(Path(plan_path).read_text(encoding="utf-8")))
    except FileNotFoundError:
        raise InputError("plan file not found", file=plan_path, key="--keep") from None
    except (ValueError, OSError) as exc:
        first = str(exc).splitlines()[0]
        raise InputError(
            f"not a plan written by `planner solve --json`: {first}", file=plan_path, key="--keep"
        ) from None
    kept: dict[PoolKey, tuple[int, int]] = {}
    for row in plan.servers:
        if row.server not in catalog.servers or row.gpu not in catalog.gpus or row.fabric not in catalog.fabrics:
            raise InputError(
                f"the kept plan has {row.server}/{row.gpu}/{row.fabric}, which the catalog does not know",
                file=plan_path,
                key="servers",
            )
        key = PoolKey(row.server, row.gpu, row.fabric)
        servers, racks = kept.get(key, (0, 0))
        kept[key] = (servers + row.count, racks + row.racks)
    return kept
