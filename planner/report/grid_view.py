"""Tables of several plans: what-if grids and side-by-side comparisons."""

from __future__ import annotations

import csv
import io
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from planner.report.text import cell, plain


def rows_csv(rows: list[dict[str, Any]]) -> str:
    columns: list[str] = []
    for row in rows:
        columns += [k for k in row if k not in columns]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    writer.writerow({k: cell(k) for k in columns})  # the header: swept paths are the user's text
    for row in rows:
        writer.writerow({k: "" if row.get(k) is None else cell(row.get(k)) for k in columns})
    return buf.getvalue()


def _cell(value: Any) -> Text:
    if value is None:
        return plain("-")
    if isinstance(value, float):
        return plain(f"{value:,.0f}" if abs(value) >= 100 else f"{value:g}")
    return plain(value)


def print_rows(rows: list[dict[str, Any]], console: Console, title: str) -> None:
    if not rows:
        return
    columns: list[str] = []
    for row in rows:
        columns += [k for k in row if k not in columns]
    t = Table(title=plain(title), title_justify="left")
    for col in columns:
        t.add_column(plain(col), overflow="fold")
    for row in rows:
        t.add_row(*[_cell(row.get(c)) for c in columns])
    console.print(t)
