"""Hostile surroundings and hostile names, through the real command line (issue 12).

Files out, safe: an output is a regular file written whole by rename in its folder. A target
that exists and is not a regular file (a device such as /dev/null, a FIFO, a folder, or a
symbolic link to anything) is refused with exit 2 before any solving and left as it was, as
are two outputs on one path; `-` is standard output for JSON.

Text out, inert: a problem name is data. `[/bold] x` is not rich markup, `\\x1b[2J` never
reaches the terminal raw, `=HYPERLINK(...)` is never a spreadsheet formula, control
characters never crash the XLSX export, and a file name holding a newline cannot inject YAML
into the problem `import-melange` writes.
"""

from __future__ import annotations

import csv
import html
import io
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from openpyxl import load_workbook
from typer.testing import CliRunner

from planner.cli import app
from planner.errors import InputError
from planner.report.files import check_writable, write_all
from planner.report.text import cell, chart_text, markup, one_line, printable

PNG = b"\x89PNG\r\n\x1a\n"
ROOT = Path(__file__).resolve().parents[1]

# A problem that solves in a moment, with a training job (the schedule and its chart) and a service.
SMALL: dict[str, Any] = {
    "name": "small",
    "description": "one job, one service",
    "horizon_years": 1,
    "site": {"power_kw": 100, "racks": 2},
    "training": [{"name": "job-a", "model": {"params_b": 1.0}, "tokens": 1.0e9, "deadline_days": 10}],
    "inference": [{"name": "svc-a", "model": "llama-3.1-8b", "requests_per_s": 1}],
}

# Characters that must never reach the terminal or a file raw: ESC, BEL, NUL, DEL, C1 (CSI, NEL),
# the right-to-left override.
RAW = ("\x1b", "\x07", "\x00", "\x7f", "\x9b", "\x85", "\u202e")

HOSTILE_NAMES = {
    "markup": "[/bold] x [red]",
    "clear-screen": "\x1b[2J cleared",
    "window-title": "\x1b]0;pwned\x07 title",
    "formula": '=HYPERLINK("http://x")',
    "controls": "c0\x00\x01\x08\r c1\x9b\x85 del\x7f bidi\u202e $x$ :fire: \\frac{ @SUM(A1)",
}


@dataclass
class Run:
    code: int
    output: str  # stdout and stderr together
    stdout: str


def planner(*args: str | Path) -> Run:
    result = CliRunner().invoke(app, [str(a) for a in args])
    # CliRunner catches exceptions: anything but SystemExit escaping the CLI is a crash, not a message.
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return Run(result.exit_code, result.output, result.stdout)


def problem_file(folder: Path, name: str = "small", file: str = "problem.yaml", **changes: Any) -> Path:
    path = folder / file
    path.write_text(yaml.safe_dump({**SMALL, "name": name, **changes}, allow_unicode=False), encoding="utf-8")
    return path


def assert_inert(text: str) -> None:
    assert "Traceback" not in text
    for ch in RAW:
        assert ch not in text, f"raw {ch!r} in output"


@pytest.fixture
def no_solving(monkeypatch: pytest.MonkeyPatch) -> None:
    """Refusals happen before any solving: a solve here fails the test (and writes nothing)."""

    def refuse(*_: Any, **__: Any) -> Any:
        raise AssertionError("solved before refusing the output")

    monkeypatch.setattr("planner.pipeline.plan_context", refuse)


def snapshot(folder: Path) -> dict[str, tuple[int, str]]:
    """Every entry under ``folder``: its type and, for links, where it points."""
    out = {}
    for p in sorted(folder.rglob("*")):
        mode = p.lstat().st_mode
        out[str(p.relative_to(folder))] = (stat.S_IFMT(mode), os.readlink(p) if p.is_symlink() else "")
    return out


# ----------------------------------------------------------------------------------- files out, safe


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _folder(path: Path) -> None:
    path.mkdir()


def _link_to_file(path: Path) -> None:
    (path.parent / "real.json").write_text("keep me\n")
    path.symlink_to(path.parent / "real.json")


def _link_to_fifo(path: Path) -> None:
    os.mkfifo(path.parent / "pipe")
    path.symlink_to(path.parent / "pipe")


def _dangling_link(path: Path) -> None:
    path.symlink_to(path.parent / "nowhere.json")


SPECIAL = {
    "fifo": _fifo,
    "folder": _folder,
    "link-to-file": _link_to_file,
    "link-to-fifo": _link_to_fifo,
    "dangling-link": _dangling_link,
}


@pytest.mark.parametrize("option", ["--json", "--csv", "--xlsx", "--html"])
@pytest.mark.parametrize("kind", list(SPECIAL))
def test_output_on_a_special_file_is_refused(tmp_path: Path, no_solving: None, kind: str, option: str) -> None:
    problem = problem_file(tmp_path)
    target = tmp_path / "out"
    SPECIAL[kind](target)
    before = snapshot(tmp_path)
    run = planner("solve", problem, option, target, "--csv" if option != "--csv" else "--json", tmp_path / "other")
    assert run.code == 2, run.output
    assert str(target) in run.output.replace("\n", "")
    assert_inert(run.output)
    assert snapshot(tmp_path) == before  # the target untouched, nothing else written
    if kind == "link-to-file":
        assert (tmp_path / "real.json").read_text() == "keep me\n"


def test_dev_null_is_not_replaced(tmp_path: Path, no_solving: None) -> None:
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    run = planner("solve", problem_file(tmp_path), "--json", "/dev/null")
    assert run.code == 2, run.output
    assert "/dev/null" in run.output
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode), "/dev/null was replaced"
    assert_inert(run.output)


def test_dev_stdout_link_is_not_replaced(tmp_path: Path, no_solving: None) -> None:
    if not os.path.islink("/dev/stdout"):
        pytest.skip("/dev/stdout is not a symbolic link here")
    pointed = os.readlink("/dev/stdout")
    run = planner("solve", problem_file(tmp_path), "--csv", "/dev/stdout")
    assert run.code == 2, run.output
    assert os.path.islink("/dev/stdout") and os.readlink("/dev/stdout") == pointed


@pytest.mark.parametrize(
    "outputs",
    [
        ("--json", "X", "--csv", "X"),
        ("--json", "./X", "--csv", "X"),
        ("--csv", "X", "--xlsx", "sub/../X"),
        ("--html", "charts/gantt.png", "--charts", "charts"),
    ],
    ids=["same", "dot-slash", "dot-dot", "inside-charts"],
)
def test_two_outputs_on_one_path_are_refused(
    tmp_path: Path, no_solving: None, monkeypatch: pytest.MonkeyPatch, outputs: tuple[str, ...]
) -> None:
    problem = problem_file(tmp_path)
    (tmp_path / "sub").mkdir()
    (tmp_path / "charts").mkdir()
    monkeypatch.chdir(tmp_path)
    before = snapshot(tmp_path)
    run = planner("solve", problem, *outputs)
    assert run.code == 2, run.output
    assert "same path" in run.output
    assert snapshot(tmp_path) == before


def test_json_to_stdout_streams(tmp_path: Path) -> None:
    run = planner("solve", problem_file(tmp_path), "--json", "-")
    assert run.code == 0, run.output
    assert json.loads(run.stdout)["problem"] == "small"


def test_check_writable_api(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "link").symlink_to(tmp_path / "file.json")
    (tmp_path / "file.json").write_text("{}")
    check_writable([tmp_path / "new.xlsx", None, tmp_path / "file.json"], streams=["-", None])
    check_writable([], streams=[tmp_path / "a.csv"])
    refused = {
        "fifo": ([tmp_path / "fifo"], []),
        "link": ([tmp_path / "link"], []),
        "folder": ([tmp_path], []),
        "no folder": ([tmp_path / "missing" / "x.csv"], []),
        "file-only to stdout": (["-"], []),
        "two to stdout": ([], ["-", "-"]),
        "same file": ([tmp_path / "a"], [str(tmp_path / "a")]),
    }
    for why, (files, streams) in refused.items():
        with pytest.raises(InputError):
            check_writable(files, streams)
            pytest.fail(why)


def test_write_all_refuses_special_files_and_streams_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(InputError, match="named pipe"):
        write_all({tmp_path / "a.txt": "a", tmp_path / "fifo": "b"})
    assert not (tmp_path / "a.txt").exists()  # all or nothing
    assert stat.S_ISFIFO((tmp_path / "fifo").lstat().st_mode)
    with pytest.raises(InputError):
        write_all({"-": b"\x89PNG"})
    write_all({tmp_path / "a.txt": "a", "-": "to stdout\n"})
    assert (tmp_path / "a.txt").read_text() == "a"
    assert capsys.readouterr().out == "to stdout\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "fifo"]  # no temporaries left


# ---------------------------------------------------------------------------------- text out, inert


def test_text_helpers() -> None:
    assert printable("a\x1b[2Jb\tc\nd\x9b\u202e") == "a\\x1b[2Jb\tc\nd\\x9b\\u202e"
    assert one_line("a\nb\u2028c\td") == "a\\x0ab\\u2028c\\x09d"
    assert markup("[/bold] \x1b") == "\\[/bold] \\x1b"
    assert chart_text("$x$") == r"\$x\$"
    for text in ("=1+2", "+1+2", "-1+2", "@SUM(A1)", "\tx"):
        assert str(cell(text)).startswith("'"), text
    assert cell("\rx") == "\\x0dx"  # a carriage return is made visible, so it starts nothing
    for value in (-5, -2.5, "-5", "+1e3", "-0.25", "plain", None, True):
        assert cell(value) == value
    assert cell("a\x00b") == "a\\x00b"


def check_xlsx(path: Path, name: str) -> None:
    wb = load_workbook(path)
    for ws in wb:
        for row in ws.iter_rows():
            for c in row:
                assert c.data_type != "f", (ws.title, c.coordinate, c.value)
                if isinstance(c.value, str):
                    assert not c.value.startswith("="), (ws.title, c.coordinate, c.value)
                    assert_inert(c.value)
    assert wb["Summary"]["B2"].value == cell(name)


@pytest.mark.parametrize("name", list(HOSTILE_NAMES.values()), ids=list(HOSTILE_NAMES))
def test_hostile_problem_name_through_every_report(tmp_path: Path, name: str) -> None:
    problem = problem_file(tmp_path, name, description=name)
    charts = tmp_path / "charts"
    charts.mkdir()
    run = planner(
        "solve",
        problem,
        "--json",
        tmp_path / "p.json",
        "--csv",
        tmp_path / "p.csv",
        "--xlsx",
        tmp_path / "p.xlsx",
        "--html",
        tmp_path / "p.html",
        "--charts",
        charts,
    )
    assert run.code == 0, run.output
    assert_inert(run.output)
    assert printable(name).split()[0] in run.output  # shown, as text
    assert json.loads((tmp_path / "p.json").read_text())["problem"] == name  # data stays exact
    check_xlsx(tmp_path / "p.xlsx", name)
    page = (tmp_path / "p.html").read_text()
    assert_inert(page)
    assert html.escape(printable(name)) in page
    for row in csv.reader(io.StringIO((tmp_path / "p.csv").read_text())):
        assert not any(field.startswith("=") for field in row)
    for png in ("tco_breakdown.png", "cash_flow.png", "gantt.png"):
        assert (charts / png).read_bytes().startswith(PNG)


def test_hostile_name_of_an_infeasible_problem(tmp_path: Path) -> None:
    name = "[/bold] \x1b[2J =cmd"
    problem = problem_file(tmp_path, name, finance={"budget_usd": 1000})
    run = planner("solve", problem, "--html", tmp_path / "p.html", "--xlsx", tmp_path / "p.xlsx")
    assert run.code == 1, run.output
    assert_inert(run.output)
    assert "[/bold] \\x1b[2J =cmd: no feasible plan" in run.output
    assert_inert((tmp_path / "p.html").read_text())
    check_xlsx(tmp_path / "p.xlsx", name)


def test_hostile_swept_values_in_whatif(tmp_path: Path) -> None:
    values = '[/bold] x,=HYPERLINK("http://x"),-1+2,@SUM(A1)'
    run = planner(
        "whatif",
        problem_file(tmp_path),
        "--set",
        f"name={values}",
        "--workers",
        "1",
        "--csv",
        tmp_path / "w.csv",
        "--xlsx",
        tmp_path / "w.xlsx",
    )
    assert run.code == 0, run.output
    assert_inert(run.output)
    assert "[/bold] x" in run.output
    rows = list(csv.DictReader(io.StringIO((tmp_path / "w.csv").read_text())))
    assert [r["name"] for r in rows] == ["[/bold] x", '\'=HYPERLINK("http://x")', "'-1+2", "'@SUM(A1)"]
    check_xlsx(tmp_path / "w.xlsx", "small")
    grid = list(load_workbook(tmp_path / "w.xlsx")["What-if"].iter_rows(values_only=True))
    assert grid[2][0] == '\'=HYPERLINK("http://x")'


def test_hostile_file_names_in_compare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    a = problem_file(tmp_path, file="=1+2.yaml").name
    b = problem_file(tmp_path, file="[bold]b.yaml").name
    run = planner("compare", a, b, "--csv", "c.csv")
    assert run.code == 0, run.output
    assert_inert(run.output)
    assert "[bold]b.yaml" in run.output.replace("\n", "")
    rows = list(csv.DictReader(io.StringIO((tmp_path / "c.csv").read_text())))
    assert [r["problem"] for r in rows] == ["'=1+2.yaml", "[bold]b.yaml"]


def test_melange_file_name_cannot_inject_yaml(tmp_path: Path) -> None:
    config = {
        "gpu_info": {"A10G": {"cost": 1.01, "tputs": [[2, 1], [5, 2]]}},
        "workload_distribution": [[0.2, 0.1], [0.5, 0.2]],
        "total_request_rate": 30,
        "slice_factor": 1,
    }
    evil = tmp_path / "x\nbudget_usd: 1\n# \x1b[2J.json"
    evil.write_text(json.dumps(config), encoding="utf-8")
    out = tmp_path / "problem.yaml"
    run = planner("import-melange", evil, "-o", out)
    assert run.code == 0, run.output
    text = out.read_text(encoding="utf-8")
    assert_inert(text)
    comments = [line for line in text.splitlines() if line.startswith("#")]
    assert any("x\\x0abudget_usd: 1\\x0a# \\x1b[2J.json" in line for line in comments)
    problem = yaml.safe_load(text)
    assert "budget_usd" not in problem and "budget_usd" not in problem.get("finance", {})
    assert evil.name in problem["description"]  # quoted by the YAML writer, exact when read back
    assert planner("validate", out).code == 0
