"""A self-contained HTML report: one file, no network at view time (charts inlined)."""

from __future__ import annotations

import base64
import html
from typing import Any

from planner.report.charts import cash_flow_png, tco_breakdown_png
from planner.report.tables import PURCHASE_COLUMNS
from planner.report.text import printable
from planner.schema.plan import Plan, TrainingRow

STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2em auto;max-width:1100px;color:#222}
h1{font-size:1.5em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;font-size:.9em;margin:.5em 0}
td,th{border:1px solid #ddd;padding:.3em .6em;text-align:left}td.n{text-align:right}
th{background:#f3f5f8}.note{color:#666;font-size:.85em}.bind{color:#a33;font-weight:bold}
img{max-width:100%}
"""


def _esc(text: object) -> str:
    """HTML-escaped, control characters made visible: a name is text, never markup."""
    return html.escape(printable(text))


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.2f}" if abs(value) < 1000 else f"{value:,.0f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return _esc("" if value is None else str(value))


def _table(header: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{_esc(h)}</th>" for h in header)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="n">{_fmt(v)}</td>'
            if isinstance(v, (int, float)) and not isinstance(v, bool)
            else f"<td>{_fmt(v)}</td>"
            for v in row
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def _img(png: bytes, alt: str) -> str:
    return f'<img alt="{_esc(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode()}">'


def plan_html(plan: Plan) -> str:
    title = f"{plan.problem}: GPU purchase plan"
    head = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{_esc(title)}</title>"
        f"<style>{STYLE}</style></head><body><h1>{_esc(title)}</h1>"
    )
    if plan.status == "infeasible":
        lines = plan.diagnosis.summary if plan.diagnosis else []
        items = "".join(f"<li>{_esc(x)}</li>" for x in lines)
        return f"{head}<p><b>No feasible plan.</b></p><ul>{items}</ul></body></html>"
    sections = [
        _summary(plan),
        _purchase(plan),
        _workloads(plan),
        _money(plan),
        _limits(plan),
        _fleet(plan),
        _runner_up(plan),
    ]
    note = (
        '<p class="note">Prices are catalog estimates unless the problem file quotes them. '
        "Every assumption the plan relied on is in the plan JSON under <code>assumptions</code>.</p>"
    )
    return head + "".join(sections) + note + "</body></html>"


def _summary(plan: Plan) -> str:
    status = "proven optimal" if plan.status == "optimal" else f"best found (gap {100 * (plan.gap or 0):.2f}%)"
    return (
        f"<p>TCO <b>${plan.tco_usd:,.0f}</b> over {len(plan.cash_flows) - 1} years ({status}); "
        f"capex ${plan.capex_usd:,.0f}; opex ${plan.opex_usd_per_year:,.0f} per year; "
        f"{plan.facility_power_kw:,.1f} kW facility power; {plan.racks} racks.</p>"
    )


def _purchase(plan: Plan) -> str:
    rows = [[getattr(r, c) for c in PURCHASE_COLUMNS] for r in plan.purchase]
    rows.append(["total", "", "", "", "", plan.capex_usd, "", ""])
    return "<h2>What to buy</h2>" + _table(list(PURCHASE_COLUMNS), rows)


def _spares(t: TrainingRow) -> str:
    """A job's hot spares: servers (compute trays on rack-scale systems) and their GPUs."""
    return f"{t.hot_spare_servers} ({t.hot_spare_gpus} GPUs)" if t.hot_spare_servers else "none"


def _workloads(plan: Plan) -> str:
    jobs = _table(
        ["job", "GPUs", "hot spares", "goodput", "fabric", "days", "start", "end", "deadline", "cost USD"],
        [
            [
                t.name,
                f"{t.gpus} x {t.gpu}",
                _spares(t),
                "" if t.goodput is None else f"{t.goodput:.1%}",
                t.fabric,
                t.days,
                t.start_day,
                t.end_day,
                t.deadline_days,
                t.cost_usd,
            ]
            for t in plan.training
        ],
    )
    services = _table(
        ["service", "replicas", "capacity rps", "required rps", "cost USD", "USD per M tokens"],
        [
            [
                s.name,
                ", ".join(f"{r.count} x {r.gpus_per_replica} {r.gpu} {r.precision}" for r in s.replicas),
                s.capacity_rps,
                s.required_rps,
                s.cost_usd,
                s.cost_usd_per_million_tokens,
            ]
            for s in plan.inference
        ],
    )
    return "<h2>What runs where</h2>" + jobs + services


def _money(plan: Plan) -> str:
    charts = _img(tco_breakdown_png(plan), "TCO breakdown") + _img(cash_flow_png(plan), "cash flow by year")
    flows = _table(
        ["year", "capex", "opex", "resale", "depreciation", "discount factor", "present value"],
        [
            [
                f.year,
                f.capex_usd,
                f.opex_usd,
                f.residual_usd,
                f.depreciation_usd,
                f.discount_factor,
                f.present_value_usd,
            ]
            for f in plan.cash_flows
        ],
    )
    return "<h2>Money</h2>" + charts + flows


def _limits(plan: Plan) -> str:
    def status(binding: bool | None, tight: bool) -> str:
        if binding is not None:
            return "binding" if binding else "not binding"
        return "tight" if tight else ""

    return "<h2>Limits</h2>" + _table(
        ["limit", "used", "unit", "of", "slack", "status", "TCO change if loosened"],
        [
            [c.name, c.used, c.unit, c.limit, c.slack, status(c.binding, c.tight), c.marginal_usd]
            for c in plan.constraints
        ],
    )


def _fleet(plan: Plan) -> str:
    """How busy each owned pool is, and what the buyer should know (the plan's advice rows)."""
    busy = _table(
        ["pool", "GPUs", "GPU-days", "busy GPU-days", "busy share"],
        [[u.pool, u.gpus, u.gpu_days, u.busy_gpu_days, f"{u.busy_share:.1%}"] for u in plan.utilisation],
    )
    advice = _table(["kind", "advice", "USD at stake"], [[a.kind, a.message, a.usd] for a in plan.advice])
    return "<h2>The fleet over the horizon</h2>" + busy + "<h2>Advice</h2>" + advice


def _runner_up(plan: Plan) -> str:
    if not (plan.explanations and plan.explanations.runner_up):
        return ""
    r = plan.explanations.runner_up
    mix = " + ".join(f"{n}x {g}" for g, n in r.gpus.items())
    return f"<p>Runner-up with a different GPU mix: {_esc(mix)} at ${r.tco_usd:,.0f} (+${r.extra_usd:,.0f}).</p>"
