"""The built catalog kept between runs: always equal to building it from the files, whatever is
in the cache folder (nothing, a stale entry, a broken or hostile one, or no folder to write)."""

from __future__ import annotations

import io
import pickle
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from planner import catalog as catalog_module
from planner import catalog_cache, kept
from planner.catalog import CATALOG_FILES, Catalog, built_catalog
from planner.schema.catalog import Gpu


@pytest.fixture(scope="module")
def texts() -> dict[str, str]:
    return {name: catalog_module._text(name) for name in CATALOG_FILES}


class Counting:
    def __init__(self, texts: dict[str, str]) -> None:
        self.texts = texts
        self.calls = 0

    def __call__(self) -> Catalog:
        self.calls += 1
        return built_catalog(self.texts)


def _entries(folder: Path) -> list[Path]:
    return sorted(folder.glob(f"{catalog_cache.STEM}-*.pickle"))


def test_the_kept_catalog_equals_the_one_built_from_the_files(folder: Path, texts: dict[str, str]) -> None:
    build = Counting(texts)
    first = catalog_cache.built_once(texts, Catalog, build)
    again = catalog_cache.built_once(texts, Catalog, build)
    assert build.calls == 1  # the second came from the entry
    assert again is not first
    assert again == first == built_catalog(texts)
    assert len(_entries(folder)) == 1


def test_load_catalog_reads_an_entry_equal_to_a_fresh_build(folder: Path, texts: dict[str, str]) -> None:
    catalog_module.load_catalog.cache_clear()
    try:
        catalog_module.load_catalog()  # writes the entry
        assert len(_entries(folder)) == 1
        catalog_module.load_catalog.cache_clear()
        assert catalog_module.load_catalog() == built_catalog(texts)
    finally:
        catalog_module.load_catalog.cache_clear()


def test_an_edited_file_builds_again_and_its_old_entry_goes(folder: Path, texts: dict[str, str]) -> None:
    build = Counting(texts)
    catalog_cache.built_once(texts, Catalog, build)
    edited = dict(texts, **{"cloud.yaml": texts["cloud.yaml"] + "\n# a comment changes the text\n"})
    build_edited = Counting(edited)
    catalog_cache.built_once(edited, Catalog, build_edited)
    assert build_edited.calls == 1
    assert len(_entries(folder)) == 1  # only the edited files' entry is left


def test_edited_code_makes_a_new_key(monkeypatch: pytest.MonkeyPatch, texts: dict[str, str]) -> None:
    before = catalog_cache.entry_key(texts)
    real = catalog_cache.module_source

    def edited(module: str) -> bytes:
        extra = b"\n# a field added\n" if module == "planner.schema.catalog" else b""
        return real(module) + extra

    monkeypatch.setattr(kept, "module_source", edited)  # where every kept family reads sources
    assert catalog_cache.entry_key(texts) != before


def test_every_file_and_module_enters_the_key(texts: dict[str, str]) -> None:
    keys = {catalog_cache.entry_key(texts)}
    for name in texts:
        keys.add(catalog_cache.entry_key(dict(texts, **{name: texts[name] + " "})))
    assert len(keys) == 1 + len(texts)


@pytest.mark.parametrize("junk", [b"", b"not a pickle", b"\x80\x05\x95"])
def test_a_broken_entry_is_built_again_and_rewritten(folder: Path, texts: dict[str, str], junk: bytes) -> None:
    build = Counting(texts)
    catalog_cache.built_once(texts, Catalog, build)
    (entry,) = _entries(folder)
    entry.write_bytes(junk)
    assert catalog_cache.built_once(texts, Catalog, build) == built_catalog(texts)
    assert build.calls == 2
    catalog_cache.built_once(texts, Catalog, build)
    assert build.calls == 2  # written whole again


def test_an_entry_of_another_kind_is_not_returned(folder: Path, texts: dict[str, str]) -> None:
    build = Counting(texts)
    catalog_cache.built_once(texts, Catalog, build)
    (entry,) = _entries(folder)
    entry.write_bytes(pickle.dumps({"gpus": {}}))  # readable, but not a catalog
    assert catalog_cache.built_once(texts, Catalog, build) == built_catalog(texts)
    assert build.calls == 2


class _Payload:
    """Unpickles as a call of ``Path.touch`` on a file: a stand-in for any code an altered
    entry might carry."""

    def __init__(self, target: Path) -> None:
        self.target = target

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path.touch, (self.target,))


def test_an_entry_that_would_run_code_is_refused(folder: Path, tmp_path: Path, texts: dict[str, str]) -> None:
    build = Counting(texts)
    catalog_cache.built_once(texts, Catalog, build)
    (entry,) = _entries(folder)
    target = tmp_path / "ran"
    entry.write_bytes(pickle.dumps(_Payload(target)))
    assert pickle.loads(pickle.dumps(_Payload(tmp_path / "plain"))) is None  # the payload works...
    assert (tmp_path / "plain").exists()
    assert catalog_cache.built_once(texts, Catalog, build) == built_catalog(texts)
    assert not target.exists()  # ...but not from the cache
    assert build.calls == 2


class _Recording(pickle.Unpickler):
    def __init__(self, data: bytes) -> None:
        super().__init__(io.BytesIO(data))
        self.names: set[tuple[str, str]] = set()

    def find_class(self, module: str, name: str) -> Any:
        self.names.add((module, name))
        return super().find_class(module, name)


def test_an_entry_names_only_dates_and_classes_the_keyed_modules_define(folder: Path, texts: dict[str, str]) -> None:
    catalog_cache.built_once(texts, Catalog, Counting(texts))
    (entry,) = _entries(folder)
    reader = _Recording(entry.read_bytes())
    assert reader.load() == built_catalog(texts)
    outside = {(m, n) for m, n in reader.names if m not in catalog_cache.SOURCES and (m, n) != ("datetime", "date")}
    assert outside == set()  # otherwise the key misses the source of a class the entry holds
    assert ("planner.catalog", "Catalog") in reader.names


def test_no_folder_to_write_still_gives_the_catalog(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, texts: dict[str, str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    monkeypatch.setenv("PLANNER_CACHE_DIR", str(blocker / "cache"))
    build = Counting(texts)
    assert catalog_cache.built_once(texts, Catalog, build) == built_catalog(texts)
    assert catalog_cache.built_once(texts, Catalog, build) == built_catalog(texts)
    assert build.calls == 2  # nothing kept, nothing broken
    assert list(tmp_path.glob("**/.catalog-*.tmp")) == []


def test_classes_read_from_an_entry_still_validate(folder: Path, texts: dict[str, str]) -> None:
    catalog_cache.built_once(texts, Catalog, Counting(texts))
    kept = catalog_cache.built_once(texts, Catalog, Counting(texts))
    gpu = next(iter(kept.gpus.values()))
    data = gpu.model_dump()
    assert Gpu.model_validate(data) == gpu
    data["memory_gb"] = "lots"
    with pytest.raises(ValidationError):
        Gpu.model_validate(data)


# imported by the keyed modules, but nothing they hold goes into a built catalog
_NOT_CONTENT = {"planner.errors", "planner.catalog_cache"}


def test_the_key_covers_every_planner_module_the_catalog_code_imports() -> None:
    import ast
    import sys

    for module in catalog_cache.SOURCES:
        tree = ast.parse(catalog_cache.module_source(module))
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
        imported |= {a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names}
        ours = {name for name in imported if name == "planner" or name.startswith("planner.")}
        # an edit there could change a built catalog while its entry's key stays the same
        assert ours <= set(catalog_cache.SOURCES) | _NOT_CONTENT, (module, sorted(ours))
        assert module in sys.modules
