"""A problem file's validated problem kept between runs: always equal to validating the file
again, whatever the cache folder holds, and never kept for a file that does not validate."""

from __future__ import annotations

import ast
import pickle
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from planner.errors import InputError
from planner.io import problem_cache
from planner.io.problem_io import load_problem, loads_problem
from planner.schema.model_ref import ConfigModel
from planner.schema.problem import Problem

PROBLEMS = Path(__file__).resolve().parent.parent / "problems"
CONFIGS = Path(__file__).resolve().parent / "data" / "configs"

SERVICE = """
name: kept
inference:
  - name: chat
    model: llama-3.1-8b
    requests_per_s: {rate}
    ttft_ms: 1500
    tpot_ms: 60
"""


def _entries(folder: Path) -> list[Path]:
    return sorted(folder.glob(f"{problem_cache.STEM}-*.pickle"))


class _Counting:
    """Counts the validations ``Problem.model_validate`` does (a cached load does none)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        real = Problem.model_validate

        def counted(data: object) -> Problem:
            self.calls += 1
            return real(data)

        monkeypatch.setattr(Problem, "model_validate", counted)


@pytest.fixture
def validations(monkeypatch: pytest.MonkeyPatch) -> _Counting:
    return _Counting(monkeypatch)


def _fresh(path: Path) -> Problem:
    """The same file validated without the cache, from its text."""
    return loads_problem(path.read_text(encoding="utf-8"), str(path), path.parent).problem


@pytest.mark.parametrize("name", sorted(p.name for p in PROBLEMS.glob("*.yaml")))
def test_every_example_read_as_kept_equals_a_fresh_validation(name: str, folder: Path, validations: _Counting) -> None:
    path = PROBLEMS / name
    first = load_problem(path).problem
    again = load_problem(path).problem
    assert validations.calls == 1  # the second load read the entry
    assert again is not first
    assert again == first == _fresh(path)
    assert len(_entries(folder)) == 1


def test_an_edited_file_is_validated_again_and_its_old_entry_goes(
    tmp_path: Path, folder: Path, validations: _Counting
) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(SERVICE.format(rate=10))
    load_problem(path)
    assert load_problem(path).problem.inference[0].requests_per_s == 10
    assert validations.calls == 1
    (old,) = _entries(folder)
    path.write_text(SERVICE.format(rate=20))
    after = load_problem(path).problem
    assert validations.calls == 2
    assert after.inference[0].requests_per_s == 20 and after == _fresh(path)
    (new,) = _entries(folder)
    assert new != old  # one entry per file, for its current data


def test_one_and_one_point_zero_are_different_data(tmp_path: Path, folder: Path, validations: _Counting) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(SERVICE.format(rate=10))
    load_problem(path)
    path.write_text(SERVICE.format(rate="10.0"))
    rate = load_problem(path).problem.inference[0].requests_per_s
    assert validations.calls == 2 and isinstance(rate, float)


def test_a_string_where_a_number_belongs_is_refused_with_its_line_even_after_a_kept_load(
    tmp_path: Path, folder: Path
) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(SERVICE.format(rate=10))
    load_problem(path)
    path.write_text(SERVICE.format(rate='"10"'))  # strict: text is not a number
    with pytest.raises(InputError) as info:
        load_problem(path)
    assert info.value.line == 6 and "requests_per_s" in str(info.value)
    assert len(_entries(folder)) == 1  # the valid data's entry; nothing kept for the refused one
    with pytest.raises(InputError):
        load_problem(path)


def test_an_edited_csv_of_requests_is_read_again(tmp_path: Path, folder: Path, validations: _Counting) -> None:
    """The key is the data after the CSV is bucketed: the problem file's text alone would keep
    the old buckets."""
    traffic = tmp_path / "traffic.csv"
    traffic.write_text("input_tokens,output_tokens\n" + "100,50\n" * 4)
    path = tmp_path / "p.yaml"
    path.write_text(SERVICE.format(rate=10) + "    mix:\n      csv: traffic.csv\n")
    assert [b.input_tokens for b in load_problem(path).problem.inference[0].mix.sized] == [100]
    traffic.write_text("input_tokens,output_tokens\n" + "3000,50\n" * 4)
    assert [b.input_tokens for b in load_problem(path).problem.inference[0].mix.sized] == [3000]
    assert validations.calls == 2


@pytest.mark.parametrize("junk", [b"", b"not a pickle", pickle.dumps({"name": "kept"})])
def test_a_broken_or_foreign_entry_is_validated_again(
    tmp_path: Path, folder: Path, validations: _Counting, junk: bytes
) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(SERVICE.format(rate=10))
    load_problem(path)
    (entry,) = _entries(folder)
    entry.write_bytes(junk)
    got = load_problem(path).problem
    assert validations.calls == 2
    load_problem(path)
    assert validations.calls == 2  # written whole again
    assert got == _fresh(path)


def test_only_the_files_last_written_are_kept(
    tmp_path: Path, folder: Path, monkeypatch: pytest.MonkeyPatch, validations: _Counting
) -> None:
    import os

    monkeypatch.setattr(problem_cache, "KEEP_FILES", 2)
    paths = []
    for index in range(3):
        path = tmp_path / f"p{index}.yaml"
        path.write_text(SERVICE.format(rate=10 + index))
        load_problem(path)
        paths.append(path)
        for n, entry in enumerate(sorted(_entries(folder), key=lambda p: p.stat().st_mtime)):
            os.utime(entry, (1_000_000 + n, 1_000_000 + n))  # distinct times whatever the clock's grain
    assert len(_entries(folder)) == 2
    load_problem(paths[2])
    assert validations.calls == 3  # the last file is still kept...
    load_problem(paths[0])
    assert validations.calls == 4  # ...the first one's entry went


def test_a_models_config_is_read_on_a_kept_load_too(tmp_path: Path, folder: Path, validations: _Counting) -> None:
    (tmp_path / "qwen3-32b").mkdir()
    shutil.copy(CONFIGS / "qwen3-32b.json", tmp_path / "qwen3-32b" / "config.json")
    path = tmp_path / "p.yaml"
    path.write_text(SERVICE.format(rate=10).replace("llama-3.1-8b", "{config: qwen3-32b/config.json}"))
    first = load_problem(path).problem.inference[0].model
    again = load_problem(path).problem.inference[0].model
    assert validations.calls == 1
    assert isinstance(again, ConfigModel) and isinstance(first, ConfigModel)
    assert again._entry is not None and again._entry == first._entry
    assert again._entry.id == "qwen3-32b"


def test_a_problem_given_as_text_is_not_kept(folder: Path) -> None:
    loads_problem(textwrap.dedent(SERVICE.format(rate=10)), "<string>")
    assert _entries(folder) == []


# imported by the keyed modules, but nothing they hold goes into a validated problem
_NOT_CONTENT = {"planner.errors"}


def test_the_key_covers_every_planner_module_the_schema_imports() -> None:
    from planner.kept import module_source

    load_problem(PROBLEMS / "startup.yaml")
    for module in problem_cache.SOURCES:
        tree = ast.parse(module_source(module))
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
        imported |= {a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names}
        ours = {name for name in imported if name == "planner" or name.startswith("planner.")}
        # an edit there could change a validated problem while its entry's key stays the same
        assert ours <= set(problem_cache.SOURCES) | _NOT_CONTENT, (module, sorted(ours))
        assert module in sys.modules


def test_every_schema_module_but_the_plans_is_keyed() -> None:
    import planner.schema

    folder = Path(planner.schema.__file__).parent
    modules = {f"planner.schema.{p.stem}" for p in folder.glob("*.py") if p.stem not in ("__init__", "plan")}
    assert modules == set(problem_cache.SOURCES)
