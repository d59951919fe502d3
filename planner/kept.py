"""Objects built from text, kept between runs as pickles (``catalog_cache``, ``io.problem_cache``).

Validating data into pydantic objects makes pydantic build their classes' validators first
(classes declared ``defer_build``: built on their first validation). Read back from here,
nothing is validated, so a run builds none of them unless it validates an object of its own.

An entry is named by a hash of the texts it was built from, of the source of the modules that
build it and define its classes (``sources``), and of the Python and pydantic versions: an
edited text or class builds it again. It is read by an unpickler that makes only the classes
those modules define (and dates), so an entry altered by hand cannot run code; one that cannot
be read, or is not what ``kind`` says, is only a missed shortcut. Entries are written whole (a
temporary file, then renamed), the older ones of the same stem removed.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import hashlib
import io
import os
import pickle
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from planner.parse_cache import cache_dir, replace_entry

T = TypeVar("T")

# Bump when what an entry holds changes in a way the sources do not show.
FORMAT = 1


@dataclass(frozen=True)
class Kept:
    """Entries named ``<stem>-<key>.pickle``: one per stem, holding instances of the classes
    ``sources`` define."""

    stem: str
    sources: tuple[str, ...]

    def built_once(self, texts: Mapping[str, str], kind: type[T], build: Callable[[], T]) -> T:
        """``build()``, or the object it built from these ``texts`` before (an instance of ``kind``)."""
        try:
            key = self.entry_key(texts)
        except OSError:  # a module's source cannot be read: no way to tell an entry is current
            return build()
        path = cache_dir() / f"{self.stem}-{key}.pickle"
        kept = read_entry(path, self.sources)
        if isinstance(kept, kind):
            return kept
        value = build()
        store_entry(path, value, f"{self.stem}-*.pickle")  # entries built from earlier texts or code go
        return value

    def entry_key(self, texts: Mapping[str, str]) -> str:
        import pydantic

        digest = hashlib.sha256(f"{FORMAT}\0{sys.version}\0{pydantic.VERSION}".encode())
        for name in sorted(texts):
            digest.update(f"\0{name}\0{texts[name]}".encode())
        for module in self.sources:
            digest.update(f"\0{module}\0".encode())
            digest.update(module_source(module))
        return digest.hexdigest()[:32]


def read_entry(path: Path, sources: tuple[str, ...]) -> object:
    """The object pickled at ``path``, made of the classes the ``sources`` modules define (and
    dates), or None."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    try:
        return _SourcesClasses(io.BytesIO(data), sources).load()
    except Exception:  # a truncated or altered entry fails in many ways: it is built again
        return None


def store_entry(path: Path, value: object, family: str, max_bytes: int | None = None) -> None:
    """``value`` pickled whole at ``path``, the other entries of ``family`` (a glob) removed;
    nothing when pickle cannot hold it or it is larger than ``max_bytes``."""
    try:
        data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError):  # nothing pickle holds: no entry
        return
    if max_bytes is None or len(data) <= max_bytes:
        replace_entry(path, data, family)


def file_name(file: Path) -> str:
    """A problem file's part of its entries' names (by its absolute path): one entry per file."""
    return hashlib.sha256(str(file.resolve()).encode()).hexdigest()[:12]


def forget_oldest(stem: str, keep: int) -> None:
    """Beyond ``keep`` entries named ``<stem>-*.pickle``, those written longest ago removed."""
    with contextlib.suppress(OSError):
        entries = sorted(cache_dir().glob(f"{stem}-*.pickle"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in entries[keep:]:
            old.unlink(missing_ok=True)


@functools.cache
def code_digest() -> str:
    """A hash naming every file of the planner's package and of its bundled catalogs: what a pure
    function's answers kept between runs were computed by (1 ms for the package's 190 files)."""
    from importlib import resources

    return folders_digest((Path(str(resources.files("planner"))), Path(str(resources.files("planner.catalogs")))))


def folders_digest(roots: tuple[Path, ...]) -> str:
    """A hash of the name, size and modification time of every file under ``roots``, sources and
    data alike, but not their byte-compiled copies (which Python writes beside them as it imports).
    Size and time, not content, as Python's own byte-compiled files are checked against their
    sources: an edit, a checkout or an install changes them (reading the files took 7-9 ms)."""
    digest = hashlib.sha256()
    for root in roots:
        if not root.is_dir():  # a zipped install, say: no way to tell what the files are
            raise OSError(f"{root} is not a folder")
        for folder, subfolders, files in os.walk(root):
            subfolders[:] = sorted(d for d in subfolders if d != "__pycache__")
            where = os.path.relpath(folder, root)
            for name in sorted(files):
                if not name.endswith((".pyc", ".pyo")):
                    stat = os.stat(os.path.join(folder, name))
                    digest.update(f"\0{where}/{name}\0{stat.st_size}\0{stat.st_mtime_ns}".encode())
    return digest.hexdigest()


def module_source(module: str) -> bytes:
    """The source of an imported module (the builder imports all of its sources first)."""
    origin = getattr(sys.modules[module], "__file__", None)
    if origin is None:
        raise OSError(f"{module} has no source file")
    return Path(origin).read_bytes()


class _SourcesClasses(pickle.Unpickler):
    """Makes the classes the ``sources`` modules define, and dates; any other name is refused."""

    def __init__(self, file: io.BytesIO, sources: tuple[str, ...]) -> None:
        super().__init__(file)
        self.sources = sources

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == ("datetime", "date"):
            return dt.date
        found = getattr(sys.modules[module], name, None) if module in self.sources and module in sys.modules else None
        if isinstance(found, type) and found.__module__ == module:
            return found
        raise pickle.UnpicklingError(f"{module}.{name} is not a class the entry may hold")
