"""Request-size mixes from observed traffic: read a CSV of request lengths and bucket it.

Each bucket's size is the mean of the requests that fall in it (rounded up), so
the bucket's GPU time per request matches its members' on average; its share is
the fraction of requests in it. Finer edges give sizes closer to each request.
"""

from __future__ import annotations

import csv
import math
from bisect import bisect_left
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from planner.errors import InputError

# Powers of two: request lengths spread over orders of magnitude.
DEFAULT_INPUT_EDGES = (128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)
DEFAULT_OUTPUT_EDGES = (64, 128, 256, 512, 1024, 2048, 4096, 8192)
MAX_ROWS = 10_000_000
COLUMNS = ("input_tokens", "output_tokens")


def read_requests_csv(path: Path, shown: str) -> list[tuple[int, int]]:
    """(input, output) token counts, one per observed request; errors name the row."""
    try:
        handle = path.open(newline="", encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read the request CSV {path}: {exc.strerror}", file=shown) from None
    rows: list[tuple[int, int]] = []
    with handle:
        reader = csv.DictReader(handle)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise InputError(
                f"the request CSV has no column {missing[0]!r} (header: {', '.join(reader.fieldnames or [])})",
                file=str(path),
                line=1,
                hint="columns input_tokens,output_tokens, one row per request",
            )
        for number, row in enumerate(reader, start=2):
            inp, out = (_count(row.get(c), c, path, number) for c in COLUMNS)
            rows.append((inp, out))
            if len(rows) > MAX_ROWS:
                raise InputError(f"the request CSV has more than {MAX_ROWS:,} rows", file=str(path), line=number)
    if not rows:
        raise InputError("the request CSV has no requests", file=str(path), line=1)
    return rows


def _count(text: str | None, column: str, path: Path, line: int) -> int:
    try:
        value = float((text or "").strip())
    except ValueError:
        value = float("nan")
    if not math.isfinite(value) or value < 1 or value != int(value):
        raise InputError(f"{column} must be a whole number of tokens >= 1, got {text!r}", file=str(path), line=line)
    return int(value)


def bucket_requests(
    requests: Sequence[tuple[int, int]],
    input_edges: Sequence[int] = DEFAULT_INPUT_EDGES,
    output_edges: Sequence[int] = DEFAULT_OUTPUT_EDGES,
) -> list[dict[str, Any]]:
    """Mix buckets (problem-file form) from observed requests; empty buckets are dropped."""
    cells: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for inp, out in requests:
        cells.setdefault((bisect_left(input_edges, inp), bisect_left(output_edges, out)), []).append((inp, out))
    buckets = []
    for (i, o), members in sorted(cells.items()):
        buckets.append(
            {
                "name": f"in{_range(input_edges, i)}_out{_range(output_edges, o)}",
                "input_tokens": math.ceil(sum(m[0] for m in members) / len(members)),
                "output_tokens": math.ceil(sum(m[1] for m in members) / len(members)),
                "share": len(members) / len(requests),
            }
        )
    return buckets


def _range(edges: Sequence[int], index: int) -> str:
    low = edges[index - 1] + 1 if index else 1
    return f"{low}-{edges[index]}" if index < len(edges) else f"{low}-up"
