"""The bundled catalog as built, kept between runs (``parse_cache`` keeps each file's parse).

Validating the six catalog files makes pydantic build the validators of the catalog's model
classes (declared ``defer_build``: built on their first validation): 0.02-0.03 s of every run on
startup, more than the rest of loading the catalog. Read back from here, nothing is validated,
so a run never builds them unless it validates a catalog object of its own (an imported model
config, say).

The entry is named by a hash of the catalog files' text, of the source of the modules that
build the catalog and define its classes (``SOURCES``), and of the Python and pydantic versions:
an edited file or class builds it again from the files. It is read by an unpickler that makes
only the classes those modules define (and dates), so an entry altered by hand cannot run code;
one that cannot be read, or is not what ``kind`` says, is only a missed shortcut. Entries are
written whole (a temporary file, then renamed), the older ones removed.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import pickle
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from planner.parse_cache import cache_dir, replace_entry

T = TypeVar("T")

# Bump when what an entry holds changes in a way the sources below do not show.
FORMAT = 1
STEM = "catalog"
# Where the catalog's code lives: the loader, the fabrics' expansion and every catalog class
# (``tests/test_catalog_cache.py`` checks that an entry names no class from elsewhere).
SOURCES = (
    "planner.catalog",
    "planner.fabric",
    "planner.parse_cache",
    "planner.schema.catalog",
    "planner.schema.efficiency",
    "planner.schema.fabric",
    "planner.schema.facility",
)


def built_once(texts: Mapping[str, str], kind: type[T], build: Callable[[], T]) -> T:
    """``build()``, or the object it built from these ``texts`` before (an instance of ``kind``)."""
    try:
        key = entry_key(texts)
    except OSError:  # a module's source cannot be read: no way to tell an entry is current
        return build()
    path = cache_dir() / f"{STEM}-{key}.pickle"
    kept = _read(path)
    if isinstance(kept, kind):
        return kept
    value = build()
    _store(path, value)
    return value


def entry_key(texts: Mapping[str, str]) -> str:
    import pydantic

    digest = hashlib.sha256(f"{FORMAT}\0{sys.version}\0{pydantic.VERSION}".encode())
    for name in sorted(texts):
        digest.update(f"\0{name}\0{texts[name]}".encode())
    for module in SOURCES:
        digest.update(f"\0{module}\0".encode())
        digest.update(module_source(module))
    return digest.hexdigest()[:32]


def module_source(module: str) -> bytes:
    """The source of an imported module (the loader imports all of ``SOURCES`` first)."""
    origin = getattr(sys.modules[module], "__file__", None)
    if origin is None:
        raise OSError(f"{module} has no source file")
    return Path(origin).read_bytes()


def _read(path: Path) -> object:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    try:
        return _CatalogClasses(io.BytesIO(data)).load()
    except Exception:  # a truncated or altered entry fails in many ways: it is built again
        return None


class _CatalogClasses(pickle.Unpickler):
    """Makes the classes ``SOURCES`` define and dates; any other name is refused."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == ("datetime", "date"):
            return dt.date
        found = getattr(sys.modules[module], name, None) if module in SOURCES and module in sys.modules else None
        if isinstance(found, type) and found.__module__ == module:
            return found
        raise pickle.UnpicklingError(f"{module}.{name} is not a catalog class")


def _store(path: Path, value: object) -> None:
    try:
        data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError):  # nothing pickle holds: no entry
        return
    replace_entry(path, data, f"{STEM}-*.pickle")  # entries built from earlier files or code go
