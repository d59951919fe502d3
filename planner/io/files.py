"""Reading the files a user gives the planner: the one home for input files.

Every file read (problem, request CSV, scenario file, kept plan, Mélange config) comes through
``read_input_text``: it must be a regular file (checked before reading, so a FIFO does not block
and ``/dev/zero`` is not read), it is read with a size cap and decoded as UTF-8 with an error that
names the byte offset and line. Files a problem names (a mix's ``csv``) resolve inside the
problem's folder (``resolve_reference``). JSON goes through ``loads_json``: no duplicate keys, no
NaN or infinities, no absurdly long numbers, no nesting that overflows the stack.

Errors are ``InputError`` and quote at most a short, escaped excerpt (``excerpt``) of what the
user wrote, never content of another file.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from pathlib import Path, PurePath
from typing import Any

from planner.errors import InputError

MAX_FILE_BYTES = 2_000_000
MAX_DIGITS = 30  # a number written with more digits than this is a slip or an attack, never a quantity
EXCERPT_CHARS = 40

_BOM = b"\xef\xbb\xbf"
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
_KINDS = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """``text`` quoted for a message: escaped (no control characters reach a terminal) and short."""
    if len(text) <= limit:
        return repr(text)
    return repr(text[:limit]) + f"... ({len(text):,} characters)"


# ------------------------------------------------------------------------------------- reading a file


def read_input_text(
    path: Path,
    expected: str,
    max_bytes: int = MAX_FILE_BYTES,
    encoding: str = "utf-8",
    *,
    shown: str | None = None,
    key: str | None = None,
) -> str:
    """A user's input file as text, or one InputError naming the file (and ``key``, when a problem
    named it): missing, not a regular file, unreadable, too large, or not UTF-8 (``encoding``
    ``utf-8-sig`` also takes a leading byte-order mark)."""
    name = shown if shown is not None else str(path)
    raw = read_input_bytes(path, expected, max_bytes, shown=name, key=key)
    skip = len(_BOM) if encoding.lower().replace("_", "-") == "utf-8-sig" and raw.startswith(_BOM) else 0
    return decode_utf8(raw, name, key=key, start=skip)


def read_input_bytes(path: Path, expected: str, max_bytes: int, *, shown: str, key: str | None = None) -> bytes:
    """At most ``max_bytes`` of a regular file; anything else is refused before it is read."""
    try:
        _check_regular(os.stat(path), expected, shown, key)  # before opening: a device is never opened
        fd = os.open(path, _OPEN_FLAGS)  # non-blocking: a FIFO swapped in after the stat does not hang
        with os.fdopen(fd, "rb") as fh:
            _check_regular(os.fstat(fh.fileno()), expected, shown, key)  # what was opened, not what was named
            os.set_blocking(fh.fileno(), True)
            raw = fh.read(max_bytes + 1)  # one byte past the cap says "too large" without reading on
    except FileNotFoundError:
        raise InputError("file not found", file=shown, key=key) from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the name
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "invalid file name"
        raise InputError(f"cannot read file: {reason}", file=shown, key=key) from None
    if len(raw) > max_bytes:
        raise InputError(f"file is larger than the limit of {max_bytes:,} bytes", file=shown, key=key)
    return raw


def _check_regular(info: os.stat_result, expected: str, shown: str, key: str | None) -> None:
    if stat.S_ISREG(info.st_mode):
        return
    if stat.S_ISDIR(info.st_mode):
        raise InputError(f"is a directory, expected {expected}", file=shown, key=key)
    kind = next((label for test, label in _KINDS if test(info.st_mode)), "not a regular file")
    raise InputError(f"is {kind}, not a regular file; expected {expected}", file=shown, key=key)


def decode_utf8(raw: bytes, name: str, *, key: str | None = None, start: int = 0) -> str:
    """``raw[start:]`` as UTF-8, or an InputError with the offset and line of the first bad byte."""
    try:
        return raw[start:].decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = start + exc.start
        line = raw[:offset].count(b"\n") + 1
        raise InputError(
            f"is not UTF-8 text (byte 0x{raw[offset]:02x} at offset {offset:,})",
            file=name,
            key=key,
            line=line,
            hint="save the file as UTF-8",
        ) from None


# ------------------------------------------------------------------------ files a problem names


def check_reference(value: str, *, file: str | None = None, key: str | None = None, line: int | None = None) -> None:
    """A path a problem names, checked as text: relative, without ``..`` leading out of its folder."""
    hint = "put the file in the problem's folder (or below it) and name it relative to the problem file"
    if not value or "\x00" in value:
        raise InputError("expected the path of a file", file=file, key=key, line=line)
    if PurePath(value).is_absolute() or PurePath(value).anchor:
        raise InputError(
            f"must be a path inside the problem's folder, got the absolute path {excerpt(value)}",
            file=file,
            key=key,
            line=line,
            hint=hint,
        )
    if PurePath(os.path.normpath(value)).parts[:1] == ("..",):
        raise InputError(
            f"{excerpt(value)} leads outside the problem's folder", file=file, key=key, line=line, hint=hint
        )


def resolve_reference(
    value: str, folder: Path, *, file: str | None = None, key: str | None = None, line: int | None = None
) -> Path:
    """The file a problem names, resolved (symlinks too) and confined to the problem's ``folder``."""
    check_reference(value, file=file, key=key, line=line)
    base = folder.resolve()
    target = (base / value).resolve()
    if not target.is_relative_to(base):
        raise InputError(
            f"{excerpt(value)} leads outside the problem's folder (through a symbolic link)",
            file=file,
            key=key,
            line=line,
            hint="copy the file into the problem's folder",
        )
    return target


# ---------------------------------------------------------------------------------------- JSON


class _Refused:
    """A JSON number or constant the reader will not take; found again afterwards to name its key."""

    def __init__(self, literal: str, reason: str) -> None:
        self.literal = literal
        self.reason = reason


class _JsonValueError(ValueError):
    pass


def loads_json(text: str, name: str = "<string>") -> Any:
    """JSON as the planner takes it; every refusal is one InputError naming the file, key and line."""
    try:
        data = json.loads(
            text,
            parse_constant=lambda token: _Refused(token, f"{token} is not a number JSON allows"),
            parse_int=_json_int,
            parse_float=_json_float,
            object_pairs_hook=_no_duplicates,
        )
    except json.JSONDecodeError as exc:
        raise InputError(f"is not valid JSON: {exc.msg} (column {exc.colno})", file=name, line=exc.lineno) from None
    except _JsonValueError as exc:
        raise InputError(f"is not valid JSON: {exc}", file=name) from None
    except RecursionError:
        raise InputError("is not valid JSON: nested too deeply", file=name) from None
    refused = _first_refused(data)
    if refused is not None:
        path, bad = refused
        raise InputError(bad.reason, file=name, key=path or None, line=_line_of_literal(text, bad.literal))
    return data


def _json_int(literal: str) -> int | _Refused:
    digits = len(literal.lstrip("-"))
    if digits > MAX_DIGITS:
        return _Refused(literal, f"a number with {digits:,} digits is beyond any sane value (at most {MAX_DIGITS})")
    return int(literal)


def _json_float(literal: str) -> float | _Refused:
    digits = sum(ch.isdigit() for ch in literal)
    if digits > MAX_DIGITS:
        return _Refused(literal, f"a number with {digits:,} digits is beyond any sane value (at most {MAX_DIGITS})")
    value = float(literal)
    if not math.isfinite(value):
        return _Refused(literal, f"{excerpt(literal)} is too large to be a finite number")
    return value


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _JsonValueError(f"key {excerpt(key)} appears twice in one object")
        out[key] = value
    return out


def _first_refused(data: Any) -> tuple[str, _Refused] | None:
    """The first refused value in document order and its dotted key (iterative: depth is no risk)."""
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, _Refused):
            return path, value
        if isinstance(value, dict):
            stack.extend((f"{path}.{k}" if path else str(k), v) for k, v in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend((f"{path}[{i}]", v) for i, v in reversed(list(enumerate(value))))
    return None


def _line_of_literal(text: str, literal: str) -> int | None:
    found = re.search(rf"(?<![\w.\-+\"]){re.escape(literal)}(?![\w.\"])", text)
    return text.count("\n", 0, found.start()) + 1 if found else None
