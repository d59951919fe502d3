"""The spreadsheet finance forwards: purchase list, cash flows, TCO breakdown, assumptions.

Cells hold values, not formulas, so every reader (and openpyxl) sees the plan's
own numbers; totals are written as values too and equal the plan's. Text from the
user (problem and workload names, swept values) goes through `text.cell`: control
characters made visible, and a leading `'` where it would otherwise read as a formula.
"""

from __future__ import annotations

import io
import json
from collections.abc import Set
from typing import Any

from openpyxl import Workbook
from openpyxl.styles import Font
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.worksheet import Worksheet

from planner.report.tables import PURCHASE_COLUMNS
from planner.report.text import cell
from planner.schema.plan import Plan

BOLD = Font(bold=True)
USD = '"$"#,##0'


def _sheet(
    wb: Workbook, title: str, header: list[str], rows: list[list[Any]], money: Set[str] = frozenset()
) -> Worksheet:
    ws = wb.create_sheet(title)
    ws.append([cell(v) for v in header])
    for c in ws[1]:
        c.font = BOLD
    for row in rows:
        ws.append([cell(v) for v in row])  # user text: printable, never a formula
    for i, name in enumerate(header, start=1):
        letter = get_column_letter(i)
        ws.column_dimensions[letter].width = max(12, min(60, len(name) + 4))
        if name in money or name.endswith("_usd"):
            for c in ws[letter][1:]:
                c.number_format = USD
    ws.freeze_panes = "A2"
    return ws


def plan_xlsx(plan: Plan, whatif: list[dict[str, Any]] | None = None) -> bytes:
    wb = Workbook()
    if (default := wb.active) is not None:
        wb.remove(default)
    summary: list[list[Any]] = [
        ["problem", plan.problem],
        ["status", plan.status],
        ["gap", plan.gap],
        ["tco_usd", plan.tco_usd],
        ["capex_usd", plan.capex_usd],
        ["opex_usd_per_year", plan.opex_usd_per_year],
        ["it_power_kw", plan.it_power_kw],
        ["facility_power_kw", plan.facility_power_kw],
        ["racks", plan.racks],
        ["gpus", ", ".join(f"{n}x {g}" for g, n in plan.gpus.items())],
        ["note", "prices are catalog estimates unless the problem file quotes them"],
    ]
    ws = _sheet(wb, "Summary", ["key", "value"], summary)
    for cells in ws.iter_rows(min_row=2):
        if str(cells[0].value).endswith("_usd") or cells[0].value == "opex_usd_per_year":
            cells[1].number_format = USD
    purchase = [[getattr(r, c) for c in PURCHASE_COLUMNS] for r in plan.purchase]
    purchase.append(["total", "", "", None, None, plan.capex_usd, None, ""])
    ws = _sheet(wb, "Purchase", list(PURCHASE_COLUMNS), purchase)
    for c in ws[ws.max_row]:
        c.font = BOLD
    flows: list[list[Any]] = [
        [f.year, f.capex_usd, f.opex_usd, f.residual_usd, f.depreciation_usd, f.discount_factor, f.present_value_usd]
        for f in plan.cash_flows
    ]
    flows.append(["total", plan.capex_usd, None, None, None, None, plan.tco_usd])
    _sheet(
        wb,
        "Cash flows",
        ["year", "capex_usd", "opex_usd", "residual_usd", "depreciation_usd", "discount_factor", "present_value_usd"],
        flows,
    )
    breakdown = [[k, v] for k, v in plan.tco_breakdown_usd.items()] + [["tco", plan.tco_usd]]
    _sheet(wb, "TCO breakdown", ["component", "present_value_usd"], breakdown)
    workloads = [
        ["training", t.name, f"{t.gpus} x {t.gpu}", t.days, t.cost_usd, None, t.hot_spare_servers, t.goodput]
        for t in plan.training
    ]
    workloads += [
        [
            "inference",
            s.name,
            ", ".join(
                f"{r.count} x {r.gpus_per_replica} {r.gpu}" + ("" if r.mode == "aggregated" else f" {r.mode}")
                for r in s.replicas
            ),
            None,
            s.cost_usd,
            s.cost_usd_per_million_tokens,
            None,
            None,
        ]
        for s in plan.inference
    ]
    _sheet(
        wb,
        "Workloads",
        ["kind", "name", "runs on", "days", "cost_usd", "cost_usd_per_million_tokens", "hot_spare_servers", "goodput"],
        workloads,
    )
    limits = [
        [c.name, c.path, c.limit, c.used, c.slack, c.unit, c.tight, c.binding, c.step, c.marginal_usd]
        for c in plan.constraints
    ]
    _sheet(
        wb,
        "Limits",
        ["name", "path", "limit", "used", "slack", "unit", "tight", "binding", "step", "marginal_usd"],
        limits,
    )
    utilisation = [[u.pool, u.gpus, u.gpu_days, u.busy_gpu_days, u.busy_share] for u in plan.utilisation]
    _sheet(wb, "Utilisation", ["pool", "gpus", "gpu_days", "busy_gpu_days", "busy_share"], utilisation)
    _sheet(wb, "Advice", ["kind", "message", "usd"], [[a.kind, a.message, a.usd] for a in plan.advice])
    _sheet(wb, "Assumptions", ["assumption", "value"], [[k, _text(v)] for k, v in _flatten(plan.assumptions)])
    if plan.stochastic:
        st = plan.stochastic
        summary = [
            [k, st.get(k)]
            for k in (
                "scenarios",
                "expected_tco_usd",
                "deterministic_expected_tco_usd",
                "wait_and_see_tco_usd",
                "vss_usd",
                "evpi_usd",
                "lower_bound_usd",
                "gap",
                "status",
                "method",
            )
        ]
        cols = ["name", "probability", "status", "tco_usd", "own_optimum_tco_usd", "deterministic_hardware_tco_usd"]
        rows = [[_cell(r.get(c)) for c in cols] for r in st["per_scenario"]]
        _sheet(wb, "Uncertainty", ["figure", "value"], summary)
        _sheet(wb, "Scenarios", cols, rows)
    if whatif:
        columns: list[str] = []
        for row in whatif:
            columns += [k for k in row if k not in columns]
        _sheet(wb, "What-if", columns, [[_cell(row.get(c)) for c in columns] for row in whatif])
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


def _cell(value: Any) -> Any:
    return value if isinstance(value, (int, float, str, type(None))) else json.dumps(value)


def _text(value: Any) -> Any:
    return value if isinstance(value, (int, float, str, bool, type(None))) else json.dumps(value)


def _flatten(data: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value and all(not isinstance(v, dict) for v in value.values()):
            out += [(f"{name}.{k}", v) for k, v in value.items()]
        elif isinstance(value, dict):
            out += _flatten(value, f"{name}.")
        else:
            out.append((name, value))
    return out
