"""Reading the measurement table: the bundled ``calibration/measured.csv`` or a file given."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from planner.errors import InputError

COLUMNS = (
    "id",
    "kind",
    "source",
    "model",
    "params_b",
    "gpu",
    "n_gpus",
    "precision",
    "framework",
    "input_tokens",
    "output_tokens",
    "batch_or_concurrency",
    "metric",
    "value",
    "notes",
)


@dataclass(frozen=True)
class Measurement:
    id: str
    kind: str
    source: str
    model: str
    params_b: str
    gpu: str
    n_gpus: str
    precision: str
    framework: str
    input_tokens: str
    output_tokens: str
    batch_or_concurrency: str
    metric: str
    value: float
    notes: str


def bundled_csv_text() -> str:
    return (resources.files("planner") / "calibration" / "measured.csv").read_text(encoding="utf-8")


def load_measurements(path: Path | None = None) -> tuple[str, list[Measurement]]:
    """The measurement table at ``path`` (default: the bundled copy) and its name for the report."""
    if path is None:
        return "planner/calibration/measured.csv (bundled)", parse_measurements(bundled_csv_text(), "measured.csv")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("file not found", file=str(path)) from None
    except UnicodeDecodeError:
        raise InputError("not a UTF-8 text file", file=str(path)) from None
    return str(path), parse_measurements(text, str(path))


def parse_measurements(text: str, name: str) -> list[Measurement]:
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise InputError(f"missing column(s): {', '.join(missing)}", file=name, hint=f"expected {','.join(COLUMNS)}")
    out: list[Measurement] = []
    for line, row in enumerate(reader, start=2):
        try:
            value = float(row["value"])
        except (TypeError, ValueError):
            raise InputError(f"value {row['value']!r} is not a number", file=name, line=line, key="value") from None
        out.append(Measurement(**{c: (row[c] or "").strip() for c in COLUMNS if c != "value"}, value=value))
    return out
