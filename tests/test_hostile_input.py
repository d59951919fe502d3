"""Hostile and careless input through the real command line (issue 12: files in, numbers with limits).

Every case must end with exit code 2, one message naming the file and the key, no traceback, no
output written, and never content of a file other than the one the user named. Cases that could
hang (a FIFO, ``/dev/zero``) run in a fresh interpreter with a timeout, so a regression fails
instead of blocking the suite.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.cli import app
from planner.io.problem_io import loads_problem

ROOT = Path(__file__).resolve().parents[1]
STARTUP = ROOT / "problems" / "startup.yaml"
PASSWD = Path("/etc/passwd")
HANG_LIMIT_S = 20.0  # a FIFO or /dev/zero must be refused at once; this only keeps a regression from hanging CI

SERVICE = """name: hostile
inference:
  - name: chat
    model: llama-3.1-8b
    requests_per_s: 5
"""
TRAFFIC = "input_tokens,output_tokens\n100,50\n120,70\n"
MELANGE = {
    "gpu_info": {
        "A10G": {"cost": 1.01, "tputs": [[2, 1], [5, 2]]},
        "A100-80GB": {"cost": 3.67, "tputs": [[20, 10], [50, 20]]},
    },
    "workload_distribution": [[0.2, 0.1], [0.5, 0.2]],
    "total_request_rate": 30,
    "slice_factor": 1,
}


@dataclass
class Run:
    code: int
    output: str  # stdout and stderr together


def planner(*args: str | Path) -> Run:
    result = CliRunner().invoke(app, [str(a) for a in args])
    # CliRunner catches exceptions: anything but SystemExit escaping the CLI is a crash, not a message.
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return Run(result.exit_code, result.output)


def planner_process(*args: str | Path, cwd: Path) -> tuple[Run, float]:
    """The CLI in a fresh interpreter, bounded in time; returns the run and how long it took."""
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "planner", *(str(a) for a in args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=HANG_LIMIT_S,
        stdin=subprocess.DEVNULL,
    )
    return Run(done.returncode, done.stdout + done.stderr), time.monotonic() - start


def refused(run: Run, *names: str) -> str:
    """Exit 2, one clean message that names each of ``names``; returns the message on one line."""
    text = " ".join(run.output.split())
    assert run.code == 2, run.output
    assert "Traceback" not in run.output, run.output
    assert run.output.count("error:") == 1, run.output
    for name in names:
        assert name in text, (name, run.output)
    return text


def assert_no_line_of(secret: Path, output: str) -> None:
    for line in secret.read_text(encoding="utf-8", errors="replace").splitlines():
        if len(line.strip()) >= 4:
            assert line not in output, f"a line of {secret} leaked into the output"


def service(tmp_path: Path, extra: str = "", name: str = "problem.yaml") -> Path:
    path = tmp_path / name
    path.write_text(SERVICE + extra, encoding="utf-8")
    return path


def with_csv(tmp_path: Path, reference: str) -> Path:
    return service(tmp_path, f"    mix: {{csv: {json.dumps(reference)}}}\n")


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    """A file outside the problem's folder, shaped like a request CSV so it would parse if read."""
    path = tmp_path / "secret.csv"
    path.write_text("input_tokens,output_tokens\n1,TOPSECRET-CELL\nTOPSECRET-ROW,2\n", encoding="utf-8")
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "traffic.csv").write_text(TRAFFIC, encoding="utf-8")
    return folder


# ------------------------------------------------------------------- not a regular file: no hang


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory"])
def test_problem_that_is_no_regular_file_is_refused_at_once(tmp_path: Path, kind: str) -> None:
    if kind == "fifo":
        target = tmp_path / "problem.yaml"
        os.mkfifo(target)  # nobody ever writes to it: reading would wait forever
    elif kind == "dev-zero":
        target = Path("/dev/zero")  # endless: reading it all is a MemoryError
    else:
        target = tmp_path
    if not target.exists():
        pytest.skip(f"{target} does not exist here")
    run, took = planner_process("validate", target, cwd=tmp_path)
    text = refused(run, str(target))
    assert "not a regular file" in text or "is a directory" in text
    assert took < HANG_LIMIT_S / 2


def test_csv_that_is_a_fifo_is_refused_at_once(project: Path) -> None:
    os.mkfifo(project / "live.csv")
    problem = with_csv(project, "live.csv")
    run, took = planner_process("validate", problem, cwd=project)
    refused(run, "live.csv", "inference.chat.mix.csv", "named pipe")
    assert took < HANG_LIMIT_S / 2


def test_kept_plan_and_scenario_file_that_are_fifos_are_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    out = tmp_path / "plan.json"
    run, _ = planner_process("solve", STARTUP, "-q", "--keep", fifo, "--json", out, cwd=tmp_path)
    refused(run, "pipe", "--keep", "named pipe")
    assert not out.exists()
    run, _ = planner_process("whatif", STARTUP, "--scenarios", fifo, cwd=tmp_path)
    refused(run, "pipe", "named pipe")


def test_melange_config_from_dev_zero_is_refused(tmp_path: Path) -> None:
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero here")
    out = tmp_path / "problem.yaml"
    run, took = planner_process("import-melange", "/dev/zero", "-o", out, cwd=tmp_path)
    refused(run, "/dev/zero", "character device")
    assert not out.exists() and took < HANG_LIMIT_S / 2


def test_oversized_problem_is_refused_without_reading_it_all(tmp_path: Path) -> None:
    big = service(tmp_path, "# " + "x" * 3_000_000 + "\n")
    refused(planner("validate", big), str(big), "larger than the limit")


# --------------------------------------------------------------------------- bytes that are not text


def test_latin1_problem_names_line_and_offset(tmp_path: Path) -> None:
    path = tmp_path / "problem.yaml"
    raw = SERVICE.encode() + b"description: caf\xe9\n"
    path.write_bytes(raw)
    offset = raw.index(b"\xe9")
    text = refused(planner("validate", path), f"{path}:6", "not UTF-8", f"offset {offset}")
    assert "0xe9" in text


def test_latin1_csv_names_file_key_line_and_offset(project: Path) -> None:
    raw = b"input_tokens,output_tokens\n100,50\n# Z\xfcrich\n"
    (project / "latin.csv").write_bytes(raw)
    offset = raw.index(b"\xfc")
    problem = with_csv(project, "latin.csv")
    refused(planner("validate", problem), f"{project / 'latin.csv'}:3", "inference.chat.mix.csv", f"offset {offset}")


@pytest.mark.parametrize("quoted", [False, True])
def test_csv_with_a_200kb_field_is_an_input_error(project: Path, quoted: bool) -> None:
    field = "7" * 200_000
    (project / "wide.csv").write_text(
        f"input_tokens,output_tokens\n100,{json.dumps(field) if quoted else field}\n", encoding="utf-8"
    )
    text = refused(planner("validate", with_csv(project, "wide.csv")), "wide.csv:2", "inference.chat.mix.csv")
    assert "7" * 50 not in text  # the field is not quoted back


def test_csv_errors_quote_nothing_of_the_csv(project: Path) -> None:
    (project / "t.csv").write_text("input_tokens,output_tokens\n100,50\n100,TOPSECRET\n", encoding="utf-8")
    text = refused(planner("validate", with_csv(project, "t.csv")), "t.csv:3", "output_tokens")
    assert "TOPSECRET" not in text
    (project / "h.csv").write_text("root:x:0:0:root:/root:/bin/bash\n1\n", encoding="utf-8")
    text = refused(planner("validate", with_csv(project, "h.csv")), "h.csv:1", "input_tokens")
    assert "root:x" not in text


# --------------------------------------------------------------- files a problem names stay in its folder


def test_absolute_csv_path_is_refused_and_nothing_of_it_is_shown(project: Path) -> None:
    if not PASSWD.is_file():
        pytest.skip("no /etc/passwd here")
    problem = with_csv(project, str(PASSWD))
    text = refused(planner("validate", problem), str(problem), "inference.chat.mix.csv", "absolute path")
    assert_no_line_of(PASSWD, text)


@pytest.mark.parametrize("reference", ["../secret.csv", "sub/../../secret.csv", "./../secret.csv"])
def test_dotdot_escape_is_refused(project: Path, secret: Path, reference: str) -> None:
    problem = with_csv(project, reference)
    text = refused(planner("validate", problem), str(problem), "inference.chat.mix.csv", "outside the problem's folder")
    assert "TOPSECRET" not in text


def test_symlink_escape_is_refused(project: Path, secret: Path) -> None:
    (project / "traffic-link.csv").symlink_to(secret)
    problem = with_csv(project, "traffic-link.csv")
    text = refused(planner("validate", problem), "inference.chat.mix.csv", "symbolic link")
    assert "TOPSECRET" not in text


def test_symlink_to_passwd_is_refused(project: Path) -> None:
    if not PASSWD.is_file():
        pytest.skip("no /etc/passwd here")
    (project / "p.csv").symlink_to(PASSWD)
    text = refused(planner("validate", with_csv(project, "p.csv")), "inference.chat.mix.csv")
    assert_no_line_of(PASSWD, text)


def test_paths_inside_the_folder_still_work(project: Path) -> None:
    (project / "data").mkdir()
    (project / "data" / "t.csv").write_text(TRAFFIC, encoding="utf-8")
    for reference in ("traffic.csv", "data/t.csv", "data/../traffic.csv"):
        run = planner("validate", with_csv(project, reference))
        assert run.code == 0, run.output


@pytest.mark.parametrize(
    "option",
    [
        f"inference.chat.mix.csv={PASSWD}",
        "inference.chat.mix.csv=../secret.csv",
        f"inference.chat.mix={{csv: {PASSWD}}}",
    ],
)
def test_override_naming_a_file_outside_is_refused(project: Path, secret: Path, option: str) -> None:
    problem = with_csv(project, "traffic.csv")
    out = project / "grid.csv"
    text = refused(planner("whatif", problem, "--set", option, "--csv", out), "inference.chat.mix.csv")
    assert not out.exists()
    assert "TOPSECRET" not in text
    if PASSWD.is_file():
        assert_no_line_of(PASSWD, text)


def test_scenario_naming_a_file_outside_is_refused(project: Path) -> None:
    scenarios = project / "scenarios.yaml"
    scenarios.write_text(f"scenarios:\n  - name: evil\n    set: {{inference.chat.mix.csv: {PASSWD}}}\n")
    run = planner("whatif", with_csv(project, "traffic.csv"), "--scenarios", scenarios)
    text = refused(run, "scenarios.yaml:3", "inference.chat.mix.csv")
    if PASSWD.is_file():
        assert_no_line_of(PASSWD, text)


# --------------------------------------------------------------------------------------- numbers


@pytest.mark.parametrize("value", ["1:30", "!!int 1:30", "!!float 1:30:00", "-1:30"])
def test_sexagesimal_is_not_silently_a_number(tmp_path: Path, value: str) -> None:
    problem = service(tmp_path, f"    ttft_ms: {value}\n")
    refused(planner("validate", problem), f"{problem}:6", "inference.chat.ttft_ms", "1:30")


def test_sexagesimal_text_stays_text_and_octal_looking_numbers_are_decimal() -> None:
    loaded = loads_problem(SERVICE.replace("name: hostile", "name: '1:30'") + "    ttft_ms: 010\n")
    assert loaded.problem.inference[0].ttft_ms == 10
    loaded = loads_problem(SERVICE.replace("name: hostile", "name: 1:30"))
    assert loaded.problem.name == "1:30"


@pytest.mark.parametrize("value", ["9" * 5000, "9" * 31, "-" + "9" * 5000, "0." + "1" * 5000, "!!int " + "1" * 5000])
def test_huge_number_in_a_problem_names_key_and_line(tmp_path: Path, value: str) -> None:
    problem = service(tmp_path, f"    output_tokens: {value}\n")
    text = refused(planner("validate", problem), f"{problem}:6", "inference.chat.output_tokens", "digits")
    assert len(text) < 400  # the number is not quoted back


@pytest.mark.parametrize("value", ["!!int abc", "!!float abc", "!!int 0x", "!!float 1e5e5"])
def test_tagged_scalar_that_is_no_number_is_an_input_error(tmp_path: Path, value: str) -> None:
    problem = service(tmp_path, f"    output_tokens: {value}\n")
    refused(planner("validate", problem), f"{problem}:6", "inference.chat.output_tokens")


def test_huge_number_in_set_names_the_key(tmp_path: Path) -> None:
    out = tmp_path / "grid.csv"
    run = planner("whatif", service(tmp_path), "--set", f"inference.chat.requests_per_s={'9' * 5000}", "--csv", out)
    text = refused(run, "--set inference.chat.requests_per_s", "digits")
    assert len(text) < 400 and not out.exists()


@pytest.mark.parametrize(
    ("line", "key"),
    [
        ("    ttft_ms: .nan\n", "inference.chat.ttft_ms"),
        ("    ttft_ms: .inf\n", "inference.chat.ttft_ms"),
        ("    ttft_ms: -.inf\n", "inference.chat.ttft_ms"),
        ("    ttft_ms: 1e999\n", "inference.chat.ttft_ms"),
        ("    tpot_ms: !!float nan\n", "inference.chat.tpot_ms"),
    ],
)
def test_nan_and_infinity_are_refused_in_a_problem(tmp_path: Path, line: str, key: str) -> None:
    problem = service(tmp_path, line)
    refused(planner("validate", problem), f"{problem}:6", key, "finite")


def test_nan_and_infinity_are_refused_in_csv_and_set(project: Path) -> None:
    (project / "t.csv").write_text("input_tokens,output_tokens\n100,inf\nnan,5\n", encoding="utf-8")
    refused(planner("validate", with_csv(project, "t.csv")), "t.csv:2", "output_tokens")
    for option, key in (
        ("finance.pue=.nan", "finance.pue"),
        ("finance.pue=-.inf", "finance.pue"),
        ("finance={pue: .inf}", "finance"),
    ):
        run = planner("whatif", with_csv(project, "traffic.csv"), "--set", option)
        refused(run, f"--set {key}", "finite")


@pytest.mark.parametrize("kind", ["inference", "training"])
def test_inline_model_with_more_active_than_total_parameters(tmp_path: Path, kind: str) -> None:
    if kind == "inference":
        text = SERVICE.replace("model: llama-3.1-8b", "model: {params_b: 7, active_params_b: 70}")
        key = "inference.chat.model.active_params_b"
    else:
        text = "name: t\ntraining:\n  - name: pre\n    model: {params_b: 7, active_params_b: 70}\n"
        text += "    tokens: 1.0e9\n    deadline_days: 30\n"
        key = "training.pre.model.active_params_b"
    problem = tmp_path / "problem.yaml"
    problem.write_text(text, encoding="utf-8")
    refused(planner("validate", problem), f"{problem}:4", key, "must not exceed params_b")
    ok = text.replace("active_params_b: 70", "active_params_b: 7")
    problem.write_text(ok, encoding="utf-8")
    assert planner("validate", problem).code == 0


# ------------------------------------------------------------------------------ plan and Mélange JSON


@pytest.fixture(scope="module")
def plan_text(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("plan") / "plan.json"
    run = planner("solve", STARTUP, "-q", "--json", path, "--time-limit", "30")
    assert run.code == 0, run.output
    return path.read_text(encoding="utf-8")


def keep(tmp_path: Path, plan: str) -> tuple[Run, Path]:
    kept = tmp_path / "kept.json"
    kept.write_text(plan, encoding="utf-8")
    out = tmp_path / "out.json"
    return planner("solve", STARTUP, "-q", "--keep", kept, "--json", out, "--time-limit", "5"), out


def forged(plan_text: str, **row: object) -> str:
    data = json.loads(plan_text)
    data["servers"][0].update(row)
    return json.dumps(data, indent=2)


@pytest.mark.parametrize(
    ("row", "key"),
    [
        ({"count": -1}, "servers[0].count"),
        ({"count": 100_001}, "servers[0].count"),
        ({"count": 10**12}, "servers[0].count"),
        ({"racks": -1}, "servers[0].racks"),
        ({"racks": 10**9}, "servers[0].racks"),
    ],
)
def test_forged_kept_plan_with_absurd_counts(tmp_path: Path, plan_text: str, row: dict[str, int], key: str) -> None:
    run, out = keep(tmp_path, forged(plan_text, **row))
    refused(run, "kept.json", key, "between 0 and")
    assert not out.exists()


def test_kept_plan_with_huge_integer_names_key_and_line(tmp_path: Path, plan_text: str) -> None:
    text = forged(plan_text, count=1).replace('"count": 1', '"count": ' + "9" * 5000, 1)
    line = text[: text.index("9" * 5000)].count("\n") + 1
    run, out = keep(tmp_path, text)
    message = refused(run, f"kept.json:{line}", "servers[0].count", "digits")
    assert len(message) < 400 and not out.exists()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[" * 100_000, "nested too deeply"),
        ('{"a": ' * 50_000, "nested too deeply"),
        ('{"gap": NaN}', "NaN"),
        ('{"gap": 1e999}', "finite"),
        ('{"schema_version": 1, "schema_version": 1}', "appears twice"),
    ],
)
def test_malformed_kept_plan_is_an_input_error(tmp_path: Path, text: str, expected: str) -> None:
    run, out = keep(tmp_path, text)
    refused(run, "kept.json", expected)
    assert not out.exists()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[" * 100_000, "nested too deeply"),
        (json.dumps(MELANGE).replace('"total_request_rate": 30', '"total_request_rate": ' + "3" * 5000), "digits"),
        (json.dumps(MELANGE).replace('"total_request_rate": 30', '"total_request_rate": 1e999'), "finite"),
        (json.dumps(MELANGE).replace('"cost": 1.01', '"cost": Infinity'), "Infinity"),
    ],
)
def test_malformed_melange_config_is_an_input_error(tmp_path: Path, text: str, expected: str) -> None:
    config = tmp_path / "example.json"
    config.write_text(text, encoding="utf-8")
    out = tmp_path / "problem.yaml"
    text = refused(planner("import-melange", config, "-o", out), "example.json", expected)
    assert len(text) < 400 and not out.exists()


def test_melange_number_errors_name_the_key(tmp_path: Path) -> None:
    config = tmp_path / "example.json"
    config.write_text(json.dumps(MELANGE).replace('"cost": 1.01', '"cost": 1e999'), encoding="utf-8")
    refused(planner("import-melange", config, "-o", tmp_path / "p.yaml"), "example.json:1", "gpu_info.A10G.cost")


# ---------------------------------------------------------------------------- messages stay short


def test_a_huge_bad_value_is_quoted_short_and_escaped(tmp_path: Path) -> None:
    problem = service(tmp_path).read_text(encoding="utf-8").replace("name: hostile", f'name: "\\e[2J{"x" * 100_000}"')
    path = tmp_path / "problem.yaml"
    path.write_text(problem, encoding="utf-8")
    text = refused(planner("validate", path), "name")
    assert len(text) < 400
    assert "\x1b" not in text
