"""Write output files whole or not at all."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from planner.errors import InputError


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write to a temporary file beside ``path`` and rename it over: readers never see half a file."""
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise InputError("the output folder does not exist", file=str(target))
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise InputError(f"cannot write: {exc.strerror}", file=str(target)) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
