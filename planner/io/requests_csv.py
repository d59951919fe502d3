"""Request-size mixes from observed traffic: read a CSV of request lengths and bucket it.

Each bucket's size is the mean of the requests that fall in it (rounded up), so
the bucket's GPU time per request matches its members' on average; its share is
the fraction of requests in it. Finer edges give sizes closer to each request.
"""

from __future__ import annotations

import csv
import io
import math
from bisect import bisect_left
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from planner.errors import InputError
from planner.io.files import read_input_text

# Powers of two: request lengths spread over orders of magnitude.
DEFAULT_INPUT_EDGES = (128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)
DEFAULT_OUTPUT_EDGES = (64, 128, 256, 512, 1024, 2048, 4096, 8192)
MAX_ROWS = 10_000_000
MAX_CSV_BYTES = 200_000_000  # ~10 million short rows
MAX_FIELD_CHARS = 1_000  # a token count is a few digits; a longer field is not one
MAX_TOKENS = 10_000_000  # the problem schema's limit on a request's prompt or output length
COLUMNS = ("input_tokens", "output_tokens")


def read_requests_csv(path: Path, shown: str | None = None, key: str | None = None) -> list[tuple[int, int]]:
    """(input, output) token counts, one per observed request; errors name the file (``shown``),
    the problem key that named it (``key``) and the row, and never quote the file's content."""
    name = shown if shown is not None else str(path)
    expected = "a CSV of requests (input_tokens,output_tokens)"
    text = read_input_text(path, expected, MAX_CSV_BYTES, "utf-8-sig", shown=name, key=key)
    rows: list[tuple[int, int]] = []
    for number, (inp, out) in _rows(text, name, key):
        rows.append((_count(inp, COLUMNS[0], name, key, number), _count(out, COLUMNS[1], name, key, number)))
        if len(rows) > MAX_ROWS:
            raise InputError(f"the request CSV has more than {MAX_ROWS:,} rows", file=name, key=key, line=number)
    if not rows:
        raise InputError("the request CSV has no requests", file=name, key=key, line=1)
    return rows


def _rows(text: str, name: str, key: str | None) -> Iterator[tuple[int, tuple[str, str]]]:
    """(line, (input_tokens, output_tokens) fields) of every data row; malformed CSV is one InputError."""
    reader = csv.reader(io.StringIO(text, newline=""))
    columns: tuple[int, int] | None = None
    try:
        for row in reader:
            if any(len(field) > MAX_FIELD_CHARS for field in row):
                raise InputError(
                    f"a field is longer than {MAX_FIELD_CHARS:,} characters", file=name, key=key, line=reader.line_num
                )
            if columns is None:
                columns = _header(row, name, key)
                continue
            if not any(field.strip() for field in row):
                continue  # a blank line
            padded = [*row, "", ""]
            yield reader.line_num, (padded[columns[0]], padded[columns[1]])
    except csv.Error as exc:  # the module's messages name its limits, never the data
        raise InputError(f"is not a valid CSV file: {exc}", file=name, key=key, line=reader.line_num) from None
    if columns is None:
        raise InputError("the request CSV is empty", file=name, key=key, line=1, hint=_COLUMNS_HINT)


_COLUMNS_HINT = "columns input_tokens,output_tokens, one row per request"


def _header(row: list[str], name: str, key: str | None) -> tuple[int, int]:
    names = [field.strip() for field in row]
    for column in COLUMNS:
        if column not in names:
            raise InputError(
                f"the request CSV's header has no column {column!r}", file=name, key=key, line=1, hint=_COLUMNS_HINT
            )
    return names.index(COLUMNS[0]), names.index(COLUMNS[1])


def _count(text: str, column: str, name: str, key: str | None, line: int) -> int:
    problem = _why_not_a_count(text.strip())
    if problem:
        raise InputError(
            f"{column} must be a whole number of tokens between 1 and {MAX_TOKENS:,}, got {problem}",
            file=name,
            key=key,
            line=line,
        )
    return int(float(text))


def _why_not_a_count(text: str) -> str | None:
    """What is wrong with a token count, in words that quote nothing of the file."""
    if not text:
        return "an empty field"
    try:
        value = float(text)
    except ValueError:
        return "text that is not a number"
    if not math.isfinite(value) or value > MAX_TOKENS:
        return "a larger number"
    if value < 1:
        return "a number below 1"
    return "a fraction" if value != int(value) else None


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
