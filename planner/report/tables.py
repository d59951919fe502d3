"""Machine-readable outputs: plan JSON and the purchase list CSV."""

from __future__ import annotations

import csv
import io
import json

from planner.report.text import cell
from planner.schema.plan import Plan

PURCHASE_COLUMNS = (
    "category",
    "item",
    "sku",
    "quantity",
    "unit_price_usd",
    "extended_price_usd",
    "unit_power_w",
    "notes",
)


def plan_json(plan: Plan) -> str:
    return json.dumps(plan.model_dump(mode="json"), indent=2) + "\n"


def purchase_csv(plan: Plan) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(PURCHASE_COLUMNS)
    for row in plan.purchase:
        d = row.model_dump()
        writer.writerow([_cell(d[c]) for c in PURCHASE_COLUMNS])
    return buf.getvalue()


def _cell(value: object) -> object:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return cell(value)  # a user's text is never a formula in a spreadsheet
