"""A pure estimate's answers, kept for the process.

The performance model's estimates are pure functions of a query (a frozen dataclass) and
the catalog's assumptions, and what-if variants, explanation re-solves and repeated plans ask
the same ones again. Catalog records (pydantic models) do not hash: they enter a key as their
``repr``, every field's value (nested records and lists included), so an edited record is a new
question. Not their JSON: serialising a catalog record makes pydantic build its class's
serialiser first (0.014 s for ``Gpu``, 0.018 s for the five classes an estimate names, in each
options process), and a run that reads the catalog as kept (``planner.catalog_cache``) need
build none.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import fields
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

T = TypeVar("T")
Key = tuple[object, ...]


def query_key(query: Any, *extras: object) -> Key:
    """A hashable key for a dataclass query and the other arguments of an estimate."""
    names = _FIELDS.get(type(query))
    if names is None:
        names = _FIELDS[type(query)] = tuple(f.name for f in fields(query))
    values = [getattr(query, name) for name in names] + list(extras)
    return tuple(_content(v) if isinstance(v, BaseModel) else v for v in values)


# A query class's field names (``dataclasses.fields`` filters them again on every call: a fifth of
# the time of the options' thousands of keys)
_FIELDS: dict[type, tuple[str, ...]] = {}


# A frozen record's content, by the record's identity (the record is kept, so its id is not
# reused): the options of one problem ask thousands of estimates about the same few catalog
# records, and writing them out again was half the training options' time (startup: 26,000).
_CONTENTS: dict[int, tuple[BaseModel, str]] = {}
_CONTENTS_KEPT = 4096


def _content(record: BaseModel) -> str:
    if not record.model_config.get("frozen"):
        return repr(record)
    kept = _CONTENTS.get(id(record))
    if kept is not None and kept[0] is record:
        return kept[1]
    if len(_CONTENTS) >= _CONTENTS_KEPT:
        _CONTENTS.clear()
    text = repr(record)
    _CONTENTS[id(record)] = (record, text)
    return text


class Memo(Generic[T]):
    """Answers by key, the least recently used dropped beyond ``size``."""

    def __init__(self, size: int = 50_000) -> None:
        self.size = size
        self._kept: OrderedDict[Key, T] = OrderedDict()
        # inside ``recorded``: the keys asked and the answers made (None: not recorded)
        self._asked: set[Key] | None = None
        self._made: dict[Key, T] | None = None

    def __len__(self) -> int:
        return len(self._kept)

    def get(self, key: Key, compute: Callable[[], T]) -> T:
        if self._asked is not None:
            self._asked.add(key)
        if key in self._kept:
            self._kept.move_to_end(key)
            return self._kept[key]
        found = self._kept[key] = compute()
        if self._made is not None:
            self._made[key] = found
        self._trim()
        return found

    @property
    def recording(self) -> bool:
        return self._asked is not None

    def answers(self, keys: set[Key]) -> dict[Key, T]:
        """The answers to those of ``keys`` this memo holds."""
        return {k: self._kept[k] for k in keys if k in self._kept}

    @contextmanager
    def recorded(self) -> Iterator[tuple[set[Key], dict[Key, T]]]:
        """The keys asked and the answers made while the block runs (a worker's, for its parent;
        a run's, for the next run: ``planner.perf.kept_estimates``). A recording inside another
        adds to it."""
        outer = self._asked, self._made
        record: tuple[set[Key], dict[Key, T]] = (set(), {})
        self._asked, self._made = record
        try:
            yield record
        finally:
            self._asked, self._made = outer
            self._note(*record)

    def add_record(self, asked: set[Key], made: dict[Key, T]) -> None:
        """Answers another process made (the same pure function's), kept as if made here, and its
        keys asked as if asked here."""
        self.remember(made)
        self._note(asked, made)

    def _note(self, asked: set[Key], made: dict[Key, T]) -> None:
        if self._asked is not None:
            self._asked |= asked
        if self._made is not None:
            self._made.update(made)

    def remember(self, made: dict[Key, T]) -> None:
        """Keep answers made before (read back), as if made here but not recorded as made."""
        self._kept.update(made)
        self._trim()

    def _trim(self) -> None:
        while len(self._kept) > self.size:
            self._kept.popitem(last=False)
