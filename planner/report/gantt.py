"""The training schedule as a Gantt chart: text lines for the terminal, a PNG for `--charts`.

Jobs are grouped by the pool whose GPUs they run on (server, GPU, fabric: the unit the
optimiser shares between jobs that do not overlap in time); rented jobs run on a cloud's
GPUs and share nothing. The day axis spans the jobs' deadlines and end days, not the
whole horizon, on which services hold their GPUs throughout.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planner.report.charts import _figure, _png
from planner.report.files import write_all
from planner.report.text import chart_text
from planner.schema.plan import Plan, TrainingRow

WIDTH = 60  # columns of the day axis in the terminal
MAX_TICKS = 8  # tick intervals on the day axis at most
RUN, RENTED_RUN, EMPTY, DEADLINE, LATE, SHARED = "#", "=", ".", "|", "!", "+"
KEYS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

PoolKey = tuple[str, str, str]  # (server, gpu, fabric), or ("", gpu, "rented")


@dataclass(frozen=True)
class Axis:
    """Days 0..span_days drawn on `width` columns; column i covers days [i, i+1) x span/width."""

    span_days: float
    step_days: float  # between ticks
    width: int = WIDTH

    def column(self, day: float) -> int:
        """The first column whose centre is at or after `day` (0..width): a bar is
        [column(start), column(end)), so jobs one after the other never share a column."""
        return max(0, min(self.width, math.ceil(day * self.width / self.span_days - 0.5)))

    def bar(self, start_day: float, end_day: float) -> range:
        first, stop = self.column(start_day), self.column(end_day)
        if stop <= first:  # shorter than a column: one column, where its middle falls
            first = min(self.width - 1, int((start_day + end_day) / 2 * self.width / self.span_days))
            stop = first + 1
        return range(first, stop)

    def ticks(self) -> list[float]:
        return [i * self.step_days for i in range(round(self.span_days / self.step_days) + 1)]


def axis(plan: Plan, width: int = WIDTH) -> Axis:
    """0 to the latest deadline or end day, rounded up to a tick of 1, 2 or 5 x 10^k days."""
    latest = max((max(t.deadline_days, t.end_day) for t in plan.training), default=0.0)
    latest = max(latest, 1e-6)
    exponent = math.floor(math.log10(latest / MAX_TICKS))
    for power in (exponent - 1, exponent, exponent + 1):
        for mantissa in (1, 2, 5):
            step = mantissa * 10.0**power
            intervals = math.ceil(latest / step - 1e-9)
            if intervals <= MAX_TICKS:
                return Axis(span_days=intervals * step, step_days=step, width=width)
    raise AssertionError("unreachable: 10^(k+1) always fits")


def pools(plan: Plan) -> dict[PoolKey, list[TrainingRow]]:
    """Jobs by the pool they run on, owned pools first, each pool's jobs in start order."""
    groups: dict[PoolKey, list[TrainingRow]] = defaultdict(list)
    for t in plan.training:
        key = ("", t.gpu, "rented") if t.rented else (t.server, t.gpu, t.fabric)
        groups[key].append(t)
    order = sorted(groups, key=lambda k: (k[2] == "rented", k[1], k[0], k[2]))
    return {k: sorted(groups[k], key=lambda t: (t.start_day, t.name)) for k in order}


def peak_gpus(jobs: list[TrainingRow]) -> int:
    """The most GPUs the jobs hold at once, hot spares included (the busiest moment is when some job starts)."""
    return max(
        (sum(j.held_gpus for j in jobs if j.start_day <= t < j.end_day - 1e-9) for t in (j.start_day for j in jobs)),
        default=0,
    )


def _hardware(t: TrainingRow) -> str:
    """``128 x H100-SXM``, with ``+16 spare`` when the job holds hot-spare GPUs."""
    return f"{t.gpus} x {t.gpu}" + (f" +{t.hot_spare_gpus} spare" if t.hot_spare_gpus else "")


def _held_by_services(plan: Plan) -> dict[PoolKey, int]:
    held: dict[PoolKey, int] = defaultdict(int)
    for svc in plan.inference:
        for rep in svc.replicas:
            if not rep.rented:
                held[(rep.server, rep.gpu, rep.fabric)] += rep.count * rep.gpus_per_replica
    return held


def _days(x: float) -> str:
    return f"{x:g} day" if x == 1 else f"{x:.3g} days"


def bought_gpus(plan: Plan, key: PoolKey) -> int:
    return sum(r.count * r.gpus_per_server for r in plan.servers if (r.server, r.gpu, r.fabric) == key)


def _pool_title(plan: Plan, key: PoolKey, jobs: list[TrainingRow], held: dict[PoolKey, int]) -> str:
    server, gpu, fabric = key
    if fabric == "rented":
        return f"{gpu} rented from a cloud (no GPUs shared between jobs)"
    bought = bought_gpus(plan, key)
    services = f", services hold {held[key]} all along" if held.get(key) else ""
    spares = " (hot spares included)" if any(j.hot_spare_gpus for j in jobs) else ""
    return (
        f"{gpu} pool on {server} / {fabric}: {bought} GPUs bought{services}; "
        f"jobs use at most {peak_gpus(jobs)} at once{spares}"
    )


def gantt_lines(plan: Plan, width: int = WIDTH) -> list[str]:
    """The schedule as plain-text lines: a title, a day ruler, then per pool its jobs' bars
    (# running, = running on rented GPUs, | deadline, ! deadline passed) and a row naming
    which job holds the pool at each column (+ where more than one does)."""
    if not plan.training:
        return []
    ax = axis(plan, width)
    groups = pools(plan)
    held = _held_by_services(plan)
    key_of = {t.name: KEYS[i] if i < len(KEYS) else "?" for i, t in enumerate(plan.training)}
    names = [t.name for t in plan.training]
    gpus = {t.name: _hardware(t) + (" rented" if t.rented else "") for t in plan.training}
    spans = {t.name: f"day {t.start_day:.1f}-{t.end_day:.1f}" for t in plan.training}
    name_w = max(len(n) for n in [*names, "in use"])
    gpus_w = max(len(g) for g in gpus.values())
    span_w = max(len(s) for s in spans.values())
    indent = 2 + 1 + 1 + name_w + 2 + gpus_w + 2 + span_w + 2

    ruler = [" "] * (width + 1)
    labels = [" "] * (width + 8)
    for tick in ax.ticks():
        col = ax.column(tick)
        ruler[col] = "+"
        text = f"{tick:g}"
        if all(c == " " for c in labels[max(0, col - 1) : col + len(text) + 1]):
            labels[col : col + len(text)] = text
    for i, ch in enumerate(ruler):
        if ch == " " and i < width:
            ruler[i] = "-"
    horizon = plan.assumptions.get("horizon_years")
    of_horizon = f" of a {horizon:g}-year horizon" if isinstance(horizon, int | float) else ""
    legend = [f"{RUN} running", f"{DEADLINE} deadline"]
    if any(t.rented for t in plan.training):
        legend.insert(1, f"{RENTED_RUN} running on rented GPUs")
    lines = [
        f"Schedule of training jobs, day 0 to {ax.span_days:g}{of_horizon}, 1 column = {_days(ax.span_days / width)}",
        "  " + ", ".join(legend) + f" ({LATE} if passed); 'in use': which job holds the pool's GPUs"
        f" ({SHARED} more than one)",
        " " * indent + "".join(labels).rstrip(),
        " " * indent + "".join(ruler),
    ]
    for key, jobs in groups.items():
        lines.append(_pool_title(plan, key, jobs, held))
        use: list[list[str]] = [[] for _ in range(width)]
        for t in jobs:
            cells = [EMPTY] * width + [" "]
            for col in ax.bar(t.start_day, t.end_day):
                cells[col] = RENTED_RUN if t.rented else RUN
                use[col].append(key_of[t.name])
            mark = ax.column(t.deadline_days)
            cells[mark] = LATE if cells[mark] in (RUN, RENTED_RUN) else DEADLINE
            label = f"  {key_of[t.name]} {t.name:<{name_w}}  {gpus[t.name]:>{gpus_w}}  {spans[t.name]:>{span_w}}  "
            lines.append(label + "".join(cells).rstrip())
        if key[2] != "rented":
            row = "".join(EMPTY if not u else u[0] if len(u) == 1 else SHARED for u in use)
            lines.append(f"    {'in use':<{name_w}}  {'':>{gpus_w}}  {'':>{span_w}}  " + row)
    return lines


# Colours per GPU type, in the order the types first appear (matplotlib's tab10).
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"]


def gantt_png(plan: Plan) -> bytes:
    """Bars per job from start to end day, coloured by GPU type (rented ones hatched),
    grouped by pool, a black tick at each deadline; x axis in days."""
    from matplotlib.patches import Patch

    plt = _figure()
    ax = axis(plan)
    groups = pools(plan)
    colours: dict[str, str] = {}
    for t in plan.training:
        colours.setdefault(t.gpu, PALETTE[len(colours) % len(PALETTE)])
    rows = sum(len(jobs) for jobs in groups.values()) + len(groups)
    fig, axes = plt.subplots(figsize=(8, 1.2 + 0.38 * max(rows, 2)))
    y = 0.0
    ticks: list[float] = []
    tick_labels: list[str] = []
    for key, jobs in groups.items():
        server, gpu, fabric = key
        if fabric == "rented":
            title = f"{gpu} rented from a cloud"
        else:
            title = f"{gpu} pool ({server} / {fabric}, {bought_gpus(plan, key)} GPUs)"
        axes.text(ax.span_days * 0.005, y, chart_text(title), va="center", ha="left", fontsize=8, style="italic")
        y += 1
        for t in jobs:
            axes.barh(
                y,
                max(t.end_day - t.start_day, 0.0),
                left=t.start_day,
                height=0.6,
                color=colours[t.gpu],
                alpha=0.55 if t.rented else 1.0,
                hatch="//" if t.rented else None,
                edgecolor="black",
                linewidth=0.5,
            )
            axes.plot(
                [t.deadline_days], [y], marker="|", markersize=16, markeredgewidth=2, color="black", clip_on=False
            )
            ticks.append(y)
            tick_labels.append(chart_text(f"{t.name}  {_hardware(t)}"))
            y += 1
    axes.set_yticks(ticks, tick_labels, fontsize=8)
    axes.set_ylim(y - 0.4, -0.6)
    axes.set_xlim(0, ax.span_days)
    axes.set_xticks(ax.ticks())
    axes.set_xlabel("day")
    axes.grid(axis="x", linestyle=":", linewidth=0.5)
    handles: list[Any] = [Patch(facecolor=c, edgecolor="black", label=chart_text(g)) for g, c in colours.items()]
    if any(t.rented for t in plan.training):
        handles.append(Patch(facecolor="white", edgecolor="black", hatch="//", label="rented"))
    handles.extend(axes.plot([], [], "k|", markersize=10, markeredgewidth=2, label="deadline"))
    axes.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    axes.set_title(f"{chart_text(plan.problem)}: training schedule")
    out = _png(fig)
    plt.close(fig)
    return out


def write_gantt_png(plan: Plan, path: str | Path) -> None:
    """Write the chart whole or not at all."""
    write_all({path: gantt_png(plan)})
