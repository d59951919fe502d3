"""The bundled catalogs' parsed YAML, kept as JSON between runs.

Parsing the six catalog files took 0.03-0.04 s of every run (PyYAML resolves each of their
2,500 scalars in Python, even with libyaml), more than the rest of loading the catalog; reading
the same data as JSON takes 1 ms. The JSON is named by a hash of the YAML text, so an edited
catalog is parsed again (and its old entry removed): the data are always the file's.

The cache lives in ``$PLANNER_CACHE_DIR``, else ``$XDG_CACHE_HOME/planner``, else
``~/.cache/planner``. It is only a shortcut: an entry that cannot be read or written, or data
JSON cannot hold exactly (a timestamp, a key that is not a string), leave the parse as it was.
Entries are written whole (a temporary file, then renamed) so a concurrent run never reads half.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Bump when the encoding changes: older entries are then ignored (and replaced).
FORMAT = 1
_DATE = "__date__"


def cache_dir() -> Path:
    explicit = os.environ.get("PLANNER_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "planner"


def parsed(stem: str, text: str, parse: Callable[[str], Any]) -> Any:
    """``parse(text)``, or the same data from the cache; ``stem`` names the entry (one per file)."""
    digest = hashlib.sha256(f"{FORMAT}\0{text}".encode()).hexdigest()[:32]
    path = cache_dir() / f"{stem}-{digest}.json"
    with contextlib.suppress(OSError, ValueError):
        return json.loads(path.read_text(encoding="utf-8"), object_hook=_decode)
    data = parse(text)
    _store(stem, path, data)
    return data


def _store(stem: str, path: Path, data: Any) -> None:
    try:
        text = json.dumps(data, default=_encode, allow_nan=True)
    except (TypeError, ValueError):  # nothing JSON holds exactly: no entry
        return
    if json.loads(text, object_hook=_decode) != data:  # a key that was not a string, say
        return
    replace_entry(path, text.encode("utf-8"), f"{stem}-*.json")


def replace_entry(path: Path, data: bytes, family: str) -> None:
    """``data`` written whole as the cache entry ``path`` (a temporary file, then renamed), and
    every other entry of its ``family`` (a glob in the same folder: its earlier versions)
    removed; a folder that cannot be written leaves the cache as it was."""
    import tempfile  # only when an entry is written

    folder = path.parent
    with contextlib.suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=folder, prefix=f".{path.stem}-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(temporary, path)
        except OSError:
            os.unlink(temporary)
            raise
        for old in folder.glob(family):
            if old != path:
                old.unlink(missing_ok=True)


def _encode(value: object) -> object:
    if type(value) is dt.date:  # not a datetime (a subclass): its time would be lost
        return {_DATE: value.isoformat()}
    raise TypeError(f"{type(value).__name__} is not kept")


def _decode(obj: dict[str, Any]) -> Any:
    if len(obj) == 1 and _DATE in obj:
        return dt.date.fromisoformat(obj[_DATE])
    return obj
