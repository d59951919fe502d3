"""Write output files whole or not at all, and never over anything but a regular file.

Commands call ``check_writable`` once, with every output path they were given, before any
work; then ``write_all`` with what to write. An output is a regular file, written to a
temporary beside it and renamed into place, so it is created or replaced whole. A path that
exists and is not a regular file (a device such as ``/dev/null``, a FIFO, a socket, a
folder, or a symbolic link to anything: renaming over a link replaces the link) is refused,
as are two outputs on one path. ``-`` is standard output, for the formats that stream.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from planner.errors import InputError
from planner.report.text import printable

STDOUT = "-"

OutputPath = str | Path | None


def is_stdout(path: str | Path) -> bool:
    return str(path) == STDOUT


def check_writable(files: Iterable[OutputPath], streams: Iterable[OutputPath] = ()) -> None:
    """Fail before any work is done unless every output can be written as a new regular file.

    ``files``: outputs that must be files (XLSX, HTML, PNG, ...); ``streams``: outputs that may
    also be ``-`` (standard output: JSON, CSV). ``None`` entries (an option not given) are
    skipped, so a command can pass its options as they are. Raises ``InputError`` naming the
    path when a folder is missing or read-only, when the path exists and is not a regular file,
    when a file-only output is ``-``, or when two outputs (``-`` included) are one path.
    """
    given = [(p, False) for p in files if p is not None] + [(p, True) for p in streams if p is not None]
    for path, may_stream in given:
        if not is_stdout(path):
            _check_target(Path(path))
        elif not may_stream:
            raise InputError(
                "this format cannot be written to standard output ('-')", file=STDOUT, hint="give a file name"
            )
    _refuse_duplicates([p for p, _ in given])


def _refuse_duplicates(paths: Iterable[str | Path]) -> None:
    seen: dict[str, str] = {}
    for path in paths:
        key = _identity(path)
        if key in seen:
            raise InputError(
                f"two outputs on the same path ({printable(seen[key])} and {printable(path)})",
                file=printable(path),
                hint="give each output its own file",
            )
        seen[key] = str(path)


def _identity(path: str | Path) -> str:
    """One name per place: the folder resolved (links, `.`, `..`), the file name as given."""
    if is_stdout(path):
        return STDOUT
    target = Path(path)
    return os.path.join(os.path.realpath(target.parent), target.name)


def _kind(mode: int) -> str:
    kinds = (
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a named pipe (FIFO)"),
        (stat.S_ISSOCK, "a socket"),
    )
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def _refuse_special(target: Path) -> None:
    """An existing target must be a regular file (not followed if it is a link)."""
    try:
        mode = target.lstat().st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror}", file=printable(target)) from None
    if not stat.S_ISREG(mode):
        raise InputError(
            f"is {_kind(mode)}, not a regular file; an output replaces its target",
            file=printable(target),
            hint="give the name of a new or regular file",
        )


def _check_target(target: Path) -> None:
    _refuse_special(target)
    folder = target.parent
    if not folder.exists():
        raise InputError("the output folder does not exist", file=printable(target))
    if not folder.is_dir():
        raise InputError("the output folder is not a folder", file=printable(target))
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError("the output folder is not writable", file=printable(target))


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _stage(target: Path, content: str | bytes) -> str:
    """Write ``content`` to a new temporary file beside ``target``; return its name."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror}", file=printable(target)) from None
    try:
        if isinstance(content, bytes):
            with os.fdopen(fd, "wb") as fh:
                fh.write(content)
        else:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
                fh.write(content)
        # mkstemp makes owner-only files; outputs get the usual permissions.
        os.chmod(tmp, 0o666 & ~_umask())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return tmp


def write_all(outputs: Mapping[str | Path, str | bytes]) -> None:
    """Write every file to a temporary beside it, then rename them all into place.

    Readers never see half a file, and a failure while preparing any file leaves none of them
    written. A target that is not a regular file is refused here too (it may have appeared
    since ``check_writable``). The key ``-`` is standard output: text written after the files.
    """
    _refuse_duplicates(outputs)
    files = {Path(p): c for p, c in outputs.items() if not is_stdout(p)}
    streamed = [c for p, c in outputs.items() if is_stdout(p)]
    if any(isinstance(c, bytes) for c in streamed):
        raise InputError("this format cannot be written to standard output ('-')", file=STDOUT)
    staged: list[tuple[str, Path]] = []
    current: Path | None = None
    try:
        for target, content in files.items():
            current = target
            _refuse_special(target)
            staged.append((_stage(target, content), target))
        for _, target in staged:  # all checked again before the first rename: all or none
            current = target
            _refuse_special(target)
        for tmp, target in staged:
            current = target
            os.replace(tmp, target)
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror}", file=printable(current) if current else None) from None
    finally:
        for tmp, _ in staged:
            Path(tmp).unlink(missing_ok=True)
    for text in streamed:
        assert isinstance(text, str)
        sys.stdout.write(text)
        sys.stdout.flush()


def atomic_write_text(path: str | Path, text: str) -> None:
    write_all({path: text})
