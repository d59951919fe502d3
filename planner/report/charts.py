"""PNG charts for finance: TCO breakdown, cash flow by year, TCO against a swept value."""

from __future__ import annotations

import io
from types import ModuleType
from typing import Any

from planner.report.text import chart_text
from planner.schema.plan import Plan


def _figure() -> ModuleType:
    import matplotlib

    matplotlib.use("Agg")  # files only: no screen here or on servers
    import matplotlib.pyplot as plt

    return plt


def _png(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight", metadata={"Software": None})
    return buf.getvalue()


def tco_breakdown_png(plan: Plan) -> bytes:
    plt = _figure()
    parts = {k: v for k, v in plan.tco_breakdown_usd.items() if abs(v) >= 0.5}
    fig, ax = plt.subplots(figsize=(7, 3.6))
    bars = ax.barh(list(parts), [v / 1e3 for v in parts.values()], color="#3b6ea5")
    ax.bar_label(bars, labels=[f"${v / 1e3:,.0f}k" for v in parts.values()], padding=3, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("present value, thousand USD")
    ax.set_title(f"{chart_text(plan.problem)}: TCO \\${plan.tco_usd:,.0f} over {len(plan.cash_flows) - 1} years")
    out = _png(fig)
    plt.close(fig)
    return out


def cash_flow_png(plan: Plan) -> bytes:
    plt = _figure()
    years = [f.year for f in plan.cash_flows]
    fig, ax = plt.subplots(figsize=(7, 3.6))
    ax.bar(years, [f.capex_usd / 1e3 for f in plan.cash_flows], label="capex", color="#3b6ea5")
    ax.bar(years, [f.opex_usd / 1e3 for f in plan.cash_flows], label="opex", color="#e3a33b")
    ax.bar(years, [-f.residual_usd / 1e3 for f in plan.cash_flows], label="resale", color="#5aa55a")
    ax.plot(years, [f.present_value_usd / 1e3 for f in plan.cash_flows], "k.--", label="present value")
    ax.set_xlabel("year")
    ax.set_ylabel("thousand USD")
    ax.set_xticks(years)
    ax.legend(fontsize=8)
    ax.set_title("cash flow by year")
    out = _png(fig)
    plt.close(fig)
    return out


def sweep_png(rows: list[dict[str, Any]], swept: list[str]) -> bytes:
    """TCO against the first swept value (the other swept values as separate lines)."""
    plt = _figure()
    fig, ax = plt.subplots(figsize=(7, 3.6))
    parameter, others = swept[0], swept[1:]
    groups: dict[str, list[tuple[Any, float]]] = {}
    for row in rows:
        if row.get("tco_usd") is None:
            continue
        label = chart_text(", ".join(f"{k}={row[k]}" for k in others)) or "TCO"
        groups.setdefault(label, []).append((row[parameter], row["tco_usd"] / 1e3))
    for label, points in groups.items():
        points.sort(key=lambda p: p[0])
        ax.plot([p[0] for p in points], [p[1] for p in points], "o-", label=label)
    ax.set_xlabel(chart_text(parameter))
    ax.set_ylabel("TCO, thousand USD")
    if len(groups) > 1:
        ax.legend(fontsize=7)
    ax.set_title(f"TCO against {chart_text(parameter)}")
    out = _png(fig)
    plt.close(fig)
    return out
