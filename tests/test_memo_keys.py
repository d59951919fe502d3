"""Estimate keys: a catalog record enters as its content (every field's value, kept per frozen
record), so the same record is the same question, so is an equal copy (a worker's, a cached
catalog's), and an edited copy a new one."""

from __future__ import annotations

import pickle
from dataclasses import dataclass

from pydantic import BaseModel

from planner.catalog import load_catalog
from planner.perf.memo import query_key
from planner.schema.catalog import Gpu


@dataclass(frozen=True)
class _Query:
    record: BaseModel
    n: int


class _Loose(BaseModel):  # not frozen: may change in place, so never kept
    x: int


def test_a_frozen_record_keys_as_its_content_and_an_edited_copy_differs() -> None:
    gpu = load_catalog().gpu("H100-SXM")
    key = query_key(_Query(gpu, 8))
    assert key == (repr(gpu), 8)
    assert query_key(_Query(gpu, 8)) == key  # from the kept content
    assert query_key(_Query(pickle.loads(pickle.dumps(gpu)), 8)) == key  # an equal record, elsewhere
    assert query_key(_Query(Gpu.model_validate(gpu.model_dump()), 8)) == key
    edited = gpu.model_copy(update={"memory_gb": gpu.memory_gb + 1})
    assert query_key(_Query(edited, 8)) != key
    deep = gpu.model_copy(update={"price": gpu.price.model_copy(update={"usd": gpu.price.usd + 1})})
    assert query_key(_Query(deep, 8)) != key  # a nested record's field counts too


def test_every_field_of_a_catalog_record_is_in_its_key() -> None:
    """The content is the record's repr: no catalog field may be left out of it."""
    import planner.schema.catalog
    import planner.schema.efficiency
    import planner.schema.fabric
    import planner.schema.facility

    for module in (planner.schema.catalog, planner.schema.efficiency, planner.schema.fabric, planner.schema.facility):
        for cls in vars(module).values():
            if isinstance(cls, type) and issubclass(cls, BaseModel) and cls.__module__ == module.__name__:
                hidden = [name for name, f in cls.model_fields.items() if not f.repr]
                assert not hidden, f"{cls.__name__}: {hidden} not in its repr"


def test_a_record_that_may_change_is_serialised_each_time() -> None:
    loose = _Loose(x=1)
    first = query_key(_Query(loose, 1))
    loose.x = 2
    assert query_key(_Query(loose, 1)) != first
