"""The performance model's answers kept between runs of a problem file: a run that reads them
back has the same options as one that estimates afresh, and estimates only what the entry does
not answer; an entry that is stale, broken, foreign or too large is only a missed shortcut."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from planner import kept
from planner.context import prepare
from planner.io.problem_io import load_problem
from planner.options.types import WorkloadOptions
from planner.perf import disagg, inference, kept_estimates, training
from planner.perf.memo import Memo
from tests.test_problem_cache import SERVICE  # one service, its rate to fill in

ROOT = Path(__file__).resolve().parent.parent
STARTUP = ROOT / "problems" / "startup.yaml"  # 58 (service, pool) pairs: the options' workers fork


TUTOR = """
  - name: tutor
    model: llama-3.1-70b
    requests_per_s: 4
    ttft_ms: 2000
    tpot_ms: 45
"""


def _new_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Empty memos, as a new process starts with."""
    monkeypatch.setattr(inference, "KEPT", Memo())
    monkeypatch.setattr(inference, "WITHIN", Memo())
    monkeypatch.setattr(disagg, "KEPT", Memo())
    monkeypatch.setattr(training, "KEPT", Memo())


def _run(file: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[WorkloadOptions], kept_estimates.Made]:
    """The file's options as a new command-line run makes them, and the answers it made (its
    workers' included)."""
    _new_process(monkeypatch)
    with kept_estimates.recording(keys=True) as made, kept_estimates.kept_for(file):
        ctx = prepare(load_problem(file))
    return ctx.workloads, made


def _made(made: kept_estimates.Made) -> int:
    return sum(len(made[name][1]) for name in kept_estimates.KEPT)


def _entries(folder: Path) -> list[Path]:
    return sorted(folder.glob(f"{kept_estimates.STEM}-*.pickle"))


def _small(tmp_path: Path, name: str = "small.yaml", rate: float = 10) -> Path:
    path = tmp_path / name
    path.write_text(SERVICE.format(rate=rate))
    return path


@pytest.mark.parametrize("workers", ["forked", "one process"])
def test_a_second_run_estimates_nothing_and_has_the_same_options(
    folder: Path, monkeypatch: pytest.MonkeyPatch, workers: str
) -> None:
    if workers == "one process":
        monkeypatch.setattr("planner.options.parallel.PARALLEL_FROM_PAIRS", 10**9)
    first, made_first = _run(STARTUP, monkeypatch)
    assert _made(made_first) > 100  # startup's services ask hundreds of estimates
    assert len(_entries(folder)) == 1
    written = _entries(folder)[0].stat().st_mtime_ns
    second, made_second = _run(STARTUP, monkeypatch)
    assert _made(made_second) == 0
    assert second == first
    assert _entries(folder)[0].stat().st_mtime_ns == written  # nothing new: not written again


def test_with_an_entry_a_worker_may_size_the_training_jobs_and_their_estimates_come_back(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from planner import executors

    started = executors.started_map
    last_jobs: list[bool] = []

    def spy(fn, jobs, workers):  # type: ignore[no-untyped-def]
        last_jobs.append(callable(jobs[-1]))
        return started(fn, jobs, workers)

    monkeypatch.setattr(executors, "started_map", spy)
    first, _ = _run(STARTUP, monkeypatch)
    second, _ = _run(STARTUP, monkeypatch)
    # first the pairs' parts alone (this process sizes the training jobs meanwhile); with an entry,
    # the parts and then the training jobs' sizing, for whoever is free
    assert last_jobs == [False, True]
    assert second == first
    assert len(training.KEPT) > 0  # this process holds their estimates, whoever made them


def test_an_entry_holds_exactly_the_answers_a_fresh_run_makes(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, made = _run(STARTUP, monkeypatch)
    entry = kept.read_entry(_entries(folder)[0], kept_estimates.CLASSES)
    assert isinstance(entry, dict)
    assert set(entry) == set(kept_estimates.KEPT)
    for name in kept_estimates.KEPT:
        asked, answers = made[name]
        assert entry[name] == answers  # a fresh run made every answer it asked
        assert set(entry[name]) == asked


def test_an_edited_target_is_estimated_again_and_the_rest_read_back(
    tmp_path: Path, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    file = tmp_path / "two.yaml"
    two = SERVICE.format(rate=10) + TUTOR
    file.write_text(two)
    _, made_first = _run(file, monkeypatch)
    file.write_text(two.replace("requests_per_s: 4", "requests_per_s: 5"))
    _, made_rate = _run(file, monkeypatch)
    assert _made(made_rate) == 0  # a replica's estimates do not depend on the service's rate
    file.write_text(two.replace("tpot_ms: 45", "tpot_ms: 40"))  # the tutor's target
    edited, made_edit = _run(file, monkeypatch)
    assert 0 < _made(made_edit) < _made(made_first)
    _new_process(monkeypatch)
    fresh = prepare(load_problem(file)).workloads  # no entry read
    assert edited == fresh
    assert len(_entries(folder)) == 1  # the file's one entry, written again
    _, made_third = _run(file, monkeypatch)
    assert _made(made_third) == 0


def test_another_planner_code_estimates_afresh(tmp_path: Path, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    file = _small(tmp_path)
    _, made_first = _run(file, monkeypatch)
    old = _entries(folder)
    monkeypatch.setattr(kept_estimates, "code_digest", lambda: "an edited planner")
    _, made_again = _run(file, monkeypatch)
    assert _made(made_again) == _made(made_first) > 0
    assert len(_entries(folder)) == 1 and _entries(folder) != old  # the old code's entry is gone


@pytest.mark.parametrize("damage", ["truncated", "foreign class", "not a mapping"])
def test_a_broken_or_foreign_entry_is_estimated_again(
    tmp_path: Path, folder: Path, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    file = _small(tmp_path)
    first, made_first = _run(file, monkeypatch)
    (path,) = _entries(folder)
    broken: dict[str, Any] = {
        "truncated": path.read_bytes()[:100],
        "foreign class": pickle.dumps({"inference": {("key",): Path("/")}}),
        "not a mapping": pickle.dumps(["inference"]),
    }
    path.write_bytes(broken[damage])
    again, made_again = _run(file, monkeypatch)
    assert again == first
    assert _made(made_again) == _made(made_first)
    _, made_third = _run(file, monkeypatch)  # and the entry written again is whole
    assert _made(made_third) == 0


def test_an_entry_larger_than_the_limit_is_not_kept(
    tmp_path: Path, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kept_estimates, "MAX_ENTRY_BYTES", 1_000)
    file = _small(tmp_path)
    first, _ = _run(file, monkeypatch)
    assert _entries(folder) == []
    again, made = _run(file, monkeypatch)
    assert again == first and _made(made) > 0


def test_a_cache_folder_that_cannot_be_written_leaves_the_run_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("PLANNER_CACHE_DIR", str(blocker / "cache"))
    file = _small(tmp_path)
    first, made_first = _run(file, monkeypatch)
    again, made_again = _run(file, monkeypatch)
    assert again == first and _made(made_again) == _made(made_first) > 0  # nothing kept, nothing broken


def test_entries_beyond_the_last_files_go(tmp_path: Path, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kept_estimates, "KEEP_FILES", 2)
    files = [_small(tmp_path, f"p{i}.yaml", rate=10 + i) for i in range(3)]
    for i, file in enumerate(files):
        _run(file, monkeypatch)
        os.utime(_newest(folder), (i, i))  # written in this order, whatever the clock's resolution
    assert len(_entries(folder)) == 2
    _, made = _run(files[0], monkeypatch)  # the first file's entry, written longest ago, went
    assert _made(made) > 0
    _, made = _run(files[2], monkeypatch)
    assert _made(made) == 0


def _newest(folder: Path) -> Path:
    return max(_entries(folder), key=lambda p: p.stat().st_mtime_ns)


def test_outside_a_kept_run_nothing_is_read_written_or_recorded(
    tmp_path: Path, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    file = _small(tmp_path)
    _new_process(monkeypatch)
    prepare(load_problem(file))
    assert _entries(folder) == []
    assert not any(memo.recording for memo in kept_estimates.memos().values())


def test_the_digest_follows_every_file_s_name_size_and_time_but_not_byte_compiled_copies(tmp_path: Path) -> None:
    (tmp_path / "pkg" / "__pycache__").mkdir(parents=True)
    source, data = tmp_path / "pkg" / "model.py", tmp_path / "pkg" / "table.csv"
    source.write_text("X = 1\n")
    data.write_text("a,b\n1,2\n")
    before = kept.folders_digest((tmp_path / "pkg",))
    (tmp_path / "pkg" / "__pycache__" / "model.cpython-311.pyc").write_bytes(b"compiled")
    assert kept.folders_digest((tmp_path / "pkg",)) == before
    stamp = data.stat().st_mtime_ns
    data.write_text("a,b\n1,3\n")
    os.utime(data, ns=(stamp, stamp + 1))  # an edit a nanosecond later, of the same size
    assert kept.folders_digest((tmp_path / "pkg",)) != before
    os.utime(data, ns=(stamp, stamp))
    assert kept.folders_digest((tmp_path / "pkg",)) == before  # size and time, as Python checks its sources
    data.write_text("a,b\n10,2\n")
    os.utime(data, ns=(stamp, stamp))
    assert kept.folders_digest((tmp_path / "pkg",)) != before  # another size
    data.write_text("a,b\n1,2\n")
    os.utime(data, ns=(stamp, stamp))
    source.rename(tmp_path / "pkg" / "renamed.py")
    assert kept.folders_digest((tmp_path / "pkg",)) != before


def test_a_package_that_is_not_a_folder_has_no_digest_and_keeps_nothing(
    tmp_path: Path, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(OSError):
        kept.folders_digest((tmp_path / "planner.zip",))
    monkeypatch.setattr(kept_estimates, "code_digest", lambda: kept.folders_digest((tmp_path / "planner.zip",)))
    file = _small(tmp_path)
    first, _ = _run(file, monkeypatch)
    assert _entries(folder) == []
    again, made = _run(file, monkeypatch)
    assert again == first and _made(made) > 0


def test_a_memo_records_only_inside_a_recording_and_a_nested_one_adds_to_the_outer() -> None:
    memo: Memo[int] = Memo()
    memo.get(("a",), lambda: 1)
    assert not memo.recording
    with memo.recorded() as (outer_asked, outer_made):
        memo.get(("a",), lambda: 2)  # held: asked, not made
        with memo.recorded() as (inner_asked, inner_made):
            memo.get(("b",), lambda: 3)
        assert (inner_asked, inner_made) == ({("b",)}, {("b",): 3})
    assert outer_asked == {("a",), ("b",)} and outer_made == {("b",): 3}
    assert not memo.recording
    memo.add_record({("c",)}, {("c",): 4})  # a worker's answers, outside any recording
    assert memo.get(("c",), lambda: 5) == 4


@pytest.mark.parametrize(
    "command", [["solve", str(STARTUP), "--quiet", "--json", "-"], ["options", str(STARTUP), "--json"]], ids=str
)
def test_the_command_line_keeps_the_estimates_and_its_second_answer_is_the_first(
    folder: Path, command: list[str]
) -> None:
    env = {**os.environ, "PLANNER_CACHE_DIR": str(folder)}
    answers = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-m", "planner", *command], capture_output=True, text=True, timeout=300, env=env, cwd=ROOT
        )
        assert done.returncode == 0, done.stderr
        answer = json.loads(done.stdout)
        if isinstance(answer, dict):
            answer.pop("solve_seconds", None)
        answers.append(answer)
        assert len(_entries(folder)) == 1
    assert answers[0] == answers[1]


@pytest.mark.parametrize("kind", ["grid", "scenarios"])
def test_what_if_keeps_the_file_s_estimates_and_its_rows_stay_the_same(folder: Path, tmp_path: Path, kind: str) -> None:
    env = {**os.environ, "PLANNER_CACHE_DIR": str(folder)}
    scenarios = tmp_path / "scenarios.yaml"
    scenarios.write_text("scenarios:\n  - name: cheap-power\n    set: {finance.electricity_usd_per_kwh: 0.08}\n")
    asked = {
        "grid": ["--set", "finance.electricity_usd_per_kwh=0.08,0.16"],
        "scenarios": ["--scenarios", str(scenarios)],
    }[kind]
    tables = []
    for run in range(2):
        csv = tmp_path / f"rows-{run}.csv"
        command = [sys.executable, "-m", "planner", "whatif", str(STARTUP), *asked, "--csv", str(csv)]
        done = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
        assert done.returncode == 0, done.stderr
        assert len(_entries(folder)) == 1
        tables.append(csv.read_text())
    assert tables[0] == tables[1] and tables[0].count("optimal") == 2  # two variants, or the base and one scenario
