"""The catalogs' parse kept between runs: the same data as parsing the YAML, whatever is in the
cache folder (nothing, a stale entry, a broken one, or no folder to write)."""

from __future__ import annotations

import datetime as dt
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import yaml

from planner import catalog as catalog_module
from planner import parse_cache

NAMES = ("gpus.yaml", "servers.yaml", "fabrics.yaml", "models.yaml", "efficiency.yaml", "cloud.yaml")


def _yaml(text: str) -> Any:
    return yaml.load(text, Loader=yaml.SafeLoader)


class Counting:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, text: str) -> Any:
        self.calls += 1
        return _yaml(text)


@pytest.mark.parametrize("name", NAMES)
def test_every_bundled_catalog_reads_back_as_parsed(folder: Path, name: str) -> None:
    text = (resources.files("planner.catalogs") / name).read_text(encoding="utf-8")
    parse = Counting()
    first = parse_cache.parsed(name, text, parse)
    again = parse_cache.parsed(name, text, parse)
    assert parse.calls == 1  # the second came from the cache
    assert again == first == _yaml(text)
    assert _types(again) == _types(_yaml(text))  # dates stay dates, ints stay ints
    assert len(list(folder.glob(f"{name}-*.json"))) == 1


def _types(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _types(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_types(v) for v in data]
    return type(data).__name__


def test_an_edited_file_is_parsed_again_and_its_old_entry_removed(folder: Path) -> None:
    parse = Counting()
    assert parse_cache.parsed("f.yaml", "a: 1\n", parse) == {"a": 1}
    assert parse_cache.parsed("f.yaml", "a: 2\n", parse) == {"a": 2}
    assert parse.calls == 2
    assert len(list(folder.glob("f.yaml-*.json"))) == 1


def test_a_broken_entry_is_parsed_again(folder: Path) -> None:
    parse = Counting()
    parse_cache.parsed("f.yaml", "a: 2024-03-18\n", parse)
    (entry,) = folder.glob("f.yaml-*.json")
    entry.write_text('{"a": ', encoding="utf-8")  # cut short
    assert parse_cache.parsed("f.yaml", "a: 2024-03-18\n", parse) == {"a": dt.date(2024, 3, 18)}
    assert parse.calls == 2
    assert parse_cache.parsed("f.yaml", "a: 2024-03-18\n", parse) == {"a": dt.date(2024, 3, 18)}
    assert parse.calls == 2  # and written whole again


@pytest.mark.parametrize(
    "text",
    [
        "1: one\n",  # a key JSON would turn into "1"
        "at: 2024-03-18 10:00:00\n",  # a timestamp, not a date
        "a: {__date__: '2024-03-18'}\n",  # looks like the cache's own date
    ],
)
def test_data_json_cannot_hold_exactly_are_not_kept(folder: Path, text: str) -> None:
    parse = Counting()
    for _ in range(2):
        assert parse_cache.parsed("f.yaml", text, parse) == _yaml(text)
    assert parse.calls == 2
    assert not list(folder.glob("f.yaml-*.json"))


def test_a_folder_that_cannot_be_written_leaves_the_parse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder", encoding="utf-8")
    monkeypatch.setenv("PLANNER_CACHE_DIR", str(blocker / "cache"))
    parse = Counting()
    for _ in range(2):
        assert parse_cache.parsed("f.yaml", "a: [1, 2.5, true, null]\n", parse) == {"a": [1, 2.5, True, None]}
    assert parse.calls == 2


def test_the_catalog_from_the_cache_is_the_catalog_from_yaml(folder: Path) -> None:
    load = catalog_module.load_catalog.__wrapped__  # not the process's kept catalog
    from_yaml = load()
    assert len(list(folder.glob("*.json"))) == len(NAMES)
    from_cache = load()
    assert from_cache is not from_yaml
    assert from_cache.gpus == from_yaml.gpus
    assert from_cache.servers == from_yaml.servers
    assert from_cache.fabrics == from_yaml.fabrics
    assert from_cache.models == from_yaml.models
    assert from_cache.efficiency == from_yaml.efficiency
    assert from_cache.rentals == from_yaml.rentals


def test_an_entry_altered_into_other_data_gives_way_to_the_file(folder: Path) -> None:
    """Valid JSON that is not the file's data (an entry edited by hand): the catalog is read from
    the YAML, as if there were no entry."""
    load = catalog_module.load_catalog.__wrapped__
    expected = load()
    (entry,) = folder.glob("cloud.yaml-*.json")
    entry.write_text('{"rentals": [{"gpu": 1}]}', encoding="utf-8")
    assert load().rentals == expected.rentals
