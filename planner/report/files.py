"""Write output files whole or not at all."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from planner.errors import InputError


def check_writable(paths: list[str | Path]) -> None:
    """Fail before any work is done when an output folder is missing or read-only."""
    for path in paths:
        target = Path(path)
        folder = target.parent
        if not folder.is_dir():
            raise InputError("the output folder does not exist", file=str(target))
        if target.is_dir():
            raise InputError("is a folder, expected a file name", file=str(target))
        if not os.access(folder, os.W_OK):
            raise InputError("the output folder is not writable", file=str(target))


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_all(outputs: dict[str | Path, str | bytes]) -> None:
    """Write every file to a temporary beside it, then rename them all into place.

    Readers never see half a file, and a failure while preparing any file leaves
    none of them written.
    """
    staged: list[tuple[str, Path]] = []
    try:
        for path, text in outputs.items():
            target = Path(path)
            try:
                fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
            except OSError as exc:
                raise InputError(f"cannot write: {exc.strerror}", file=str(target)) from None
            staged.append((tmp, target))
            if isinstance(text, bytes):
                with os.fdopen(fd, "wb") as fh:
                    fh.write(text)
            else:
                with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
                    fh.write(text)
            # mkstemp makes owner-only files; outputs get the usual permissions.
            os.chmod(tmp, 0o666 & ~_umask())
        for tmp, target in staged:
            os.replace(tmp, target)
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror}", file=str(staged[-1][1]) if staged else None) from None
    finally:
        for tmp, _ in staged:
            Path(tmp).unlink(missing_ok=True)


def atomic_write_text(path: str | Path, text: str) -> None:
    write_all({path: text})
