"""Estimate keys: a catalog record enters as its JSON (kept per frozen record), so the same
record is the same question and an edited copy a new one."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from planner.catalog import load_catalog
from planner.perf.memo import query_key


@dataclass(frozen=True)
class _Query:
    record: BaseModel
    n: int


class _Loose(BaseModel):  # not frozen: may change in place, so never kept
    x: int


def test_a_frozen_record_keys_as_its_json_and_an_edited_copy_differs() -> None:
    gpu = load_catalog().gpu("H100-SXM")
    key = query_key(_Query(gpu, 8))
    assert key == (gpu.model_dump_json(), 8)
    assert query_key(_Query(gpu, 8)) == key  # from the kept JSON
    edited = gpu.model_copy(update={"memory_gb": gpu.memory_gb + 1})
    assert query_key(_Query(edited, 8)) != key
    assert query_key(_Query(edited, 8))[0] == edited.model_dump_json()


def test_a_record_that_may_change_is_serialised_each_time() -> None:
    loose = _Loose(x=1)
    first = query_key(_Query(loose, 1))
    loose.x = 2
    assert query_key(_Query(loose, 1)) != first
