"""Signals and limits through the real command line (issue 12): Ctrl-C, SIGTERM, the time limit,
a dead Ray address and a closed pipe.

Every case runs the CLI in a fresh process with a timeout, so a regression fails instead of
hanging the suite. The contract: Ctrl-C ends a run within seconds with exit 130 (143 for SIGTERM),
no output written, no process of the run left; a run with no plan and no proof of infeasibility
exits 3; a Ray address that does not answer exits 2; a reader that goes away ends the run quietly.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STARTUP = ROOT / "problems" / "startup.yaml"
PLANNER = [sys.executable, "-m", "planner"]
STOP_WITHIN_S = 5.0  # Ctrl-C must end a run this soon (the contract says a second or two)
START_WITHIN_S = 60.0  # how long a run may take to reach the state a test interrupts
RUN_LIMIT_S = 60.0  # any other run of this file (a hang guard: two test workers share 2 cores)


@pytest.fixture(scope="module")
def slow_problem(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A problem that loads in a second and takes CP-SAT well over a minute to prove: the
    benchmark generator's large fleet, cut to 6 services (15 training jobs with chains)."""
    path = tmp_path_factory.mktemp("slow") / "slow.yaml"
    script = ROOT / "benchmarks" / "generate.py"
    args = [sys.executable, str(script), "--services", "6", "--jobs", "15", "-o", str(path)]
    subprocess.run(args, check=True, capture_output=True, timeout=120, cwd=ROOT)
    return path


def _start(*args: str | Path) -> subprocess.Popen[str]:
    """The CLI in a session of its own: its process group is the run, worker processes included."""
    return subprocess.Popen(
        [*PLANNER, *(str(a) for a in args)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _group(pgid: int) -> list[int]:
    """Live processes of a process group (zombies excluded: they have ended)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            state, _, group = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:3]
        except OSError:  # ended meanwhile
            continue
        if int(group) == pgid and state != "Z":
            pids.append(int(entry.name))
    return pids


def _children(pid: int) -> list[int]:
    return [p for p in _group(pid) if p != pid]


def _wait_for(condition: Callable[[], bool], what: str, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + START_WITHIN_S
    while not condition():
        if proc.poll() is not None:
            _, stderr = proc.communicate()
            pytest.fail(f"the run ended (exit {proc.returncode}) before {what}: {stderr[-2000:]}")
        if time.monotonic() > deadline:
            _kill(proc)
            pytest.fail(f"no {what} within {START_WITHIN_S:g} s")
        time.sleep(0.05)


def _kill(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()


def _stopped(proc: subprocess.Popen[str], signum: int, whole_group: bool) -> tuple[int, str, float]:
    """Send the signal; the exit code, stderr and how long the run took to end."""
    sent = time.monotonic()
    if whole_group:  # what a terminal's Ctrl-C does: the whole foreground process group gets it
        os.killpg(proc.pid, signum)
    else:
        os.kill(proc.pid, signum)
    try:
        _, stderr = proc.communicate(timeout=STOP_WITHIN_S * 4)
    except subprocess.TimeoutExpired:
        _kill(proc)
        pytest.fail(f"signal {signum}: the run did not end within {STOP_WITHIN_S * 4:g} s")
    return proc.returncode, stderr, time.monotonic() - sent


def _assert_clean(proc: subprocess.Popen[str], out: Path, before: set[str]) -> None:
    time.sleep(0.2)  # a worker that was told to stop has had time to go
    left = _group(proc.pid)
    for pid in left:  # do not leave them to the next test either
        os.kill(pid, signal.SIGKILL)
    assert left == [], f"processes of the run outlived it: {left}"
    assert {p.name for p in out.iterdir()} == before, "the interrupted run wrote or removed files"


@pytest.fixture
def out(tmp_path: Path) -> Iterator[Path]:
    """An output folder holding a file the user already had (it must survive)."""
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "grid.csv").write_text("the user's own file\n")
    yield folder


def test_ctrl_c_stops_a_sweep_and_its_workers(slow_problem: Path, out: Path) -> None:
    before = {p.name for p in out.iterdir()}
    proc = _start(
        "whatif", slow_problem, "--set", "site.racks=100,200,300", "--workers", "2", "--csv", out / "grid.csv"
    )
    _wait_for(lambda: len(_children(proc.pid)) >= 2, "worker processes", proc)
    time.sleep(0.5)  # the workers are solving
    code, stderr, took = _stopped(proc, signal.SIGINT, whole_group=True)
    assert code == 130, stderr
    assert took < STOP_WITHIN_S, f"took {took:.1f} s"
    assert "Traceback" not in stderr and "interrupted" in stderr
    _assert_clean(proc, out, before)
    assert (out / "grid.csv").read_text() == "the user's own file\n"


def test_ctrl_c_stops_a_solve_while_it_solves(slow_problem: Path, out: Path) -> None:
    before = {p.name for p in out.iterdir()}
    proc = _start("solve", slow_problem, "--explain", "--json", out / "plan.json", "--csv", out / "grid.csv")
    time.sleep(4.0)  # loaded, options enumerated, model built: CP-SAT is searching (15+ deterministic s)
    code, stderr, took = _stopped(proc, signal.SIGINT, whole_group=False)
    assert code == 130, stderr
    assert took < STOP_WITHIN_S, f"took {took:.1f} s"
    assert "Traceback" not in stderr and "terminate called" not in stderr
    _assert_clean(proc, out, before)


def test_sigterm_ends_a_sweep_with_143(slow_problem: Path, out: Path) -> None:
    before = {p.name for p in out.iterdir()}
    proc = _start("whatif", slow_problem, "--set", "site.racks=100,200", "--workers", "2", "--csv", out / "g2.csv")
    _wait_for(lambda: len(_children(proc.pid)) >= 2, "worker processes", proc)
    code, stderr, took = _stopped(proc, signal.SIGTERM, whole_group=False)
    assert code == 143, stderr
    assert took < STOP_WITHIN_S, f"took {took:.1f} s"
    assert "Traceback" not in stderr
    _assert_clean(proc, out, before)


def test_no_plan_within_the_time_limit_exits_3(slow_problem: Path, tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    start = time.monotonic()
    run = subprocess.run(
        [*PLANNER, "solve", str(slow_problem), "--time-limit", "0.01", "--json", str(plan)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=RUN_LIMIT_S,
    )
    assert run.returncode == 3, run.stderr
    assert "no plan found within the time limit; feasibility unknown" in run.stderr
    assert "Traceback" not in run.stderr
    assert not plan.exists()
    assert time.monotonic() - start < RUN_LIMIT_S


def test_an_infeasible_problem_stays_infeasible_under_a_tiny_time_limit(tmp_path: Path) -> None:
    """Infeasibility proven, diagnosis cut short: still exit 1, and the diagnosis says it was cut."""
    plan = tmp_path / "plan.json"
    problem = ROOT / "problems" / "infeasible-budget.yaml"
    run = subprocess.run(
        [*PLANNER, "solve", str(problem), "--time-limit", "0.01", "-q", "--json", str(plan)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=RUN_LIMIT_S,
    )
    assert run.returncode == 1, run.stderr
    assert '"status": "infeasible"' in plan.read_text()
    assert "time limit ran out during this diagnosis" in plan.read_text()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # closed again when the block ends: nothing listens


def test_a_dead_ray_address_is_an_input_error() -> None:
    address = f"127.0.0.1:{_closed_port()}"
    start = time.monotonic()
    run = subprocess.run(
        [*PLANNER, "whatif", str(STARTUP), "--set", "site.racks=4,8", "--executor", "ray", "--address", address],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=RUN_LIMIT_S,
    )
    assert run.returncode == 2, run.stderr
    assert "--address" in run.stderr and "no Ray cluster answers" in run.stderr
    assert "Traceback" not in run.stderr
    assert time.monotonic() - start < RUN_LIMIT_S


def test_a_malformed_ray_address_is_an_input_error() -> None:
    run = subprocess.run(
        [*PLANNER, "whatif", str(STARTUP), "--set", "site.racks=4,8", "--executor", "ray", "--address", "nowhere"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=RUN_LIMIT_S,
    )
    assert run.returncode == 2 and "HOST:PORT" in run.stderr, run.stderr


def test_a_shell_pipe_to_head_ends_quietly() -> None:
    run = subprocess.run(
        f"{sys.executable} -m planner solve {STARTUP} | head -c 10",
        shell=True,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=RUN_LIMIT_S,
    )
    assert len(run.stdout) == 10
    assert "Traceback" not in run.stderr and "Exception ignored" not in run.stderr, run.stderr
    assert run.stderr == ""


@pytest.mark.parametrize("args", [["catalog", "gpus"], ["solve", str(STARTUP), "--json", "-"], ["schema"]])
def test_a_reader_gone_before_the_output_exits_141_quietly(args: list[str]) -> None:
    """Deterministic version of ``| head``: the pipe's reading end is closed before the run writes."""
    read, write = os.pipe()
    os.close(read)
    try:
        run = subprocess.run(
            [*PLANNER, *args], cwd=ROOT, stdout=write, stderr=subprocess.PIPE, text=True, timeout=RUN_LIMIT_S
        )
    finally:
        os.close(write)
    assert run.returncode == 141, run.stderr
    assert run.stderr == ""


OUTPUTS_UNDER_CTRL_C = textwrap.dedent(
    """
    import os, signal, sys, time
    from pathlib import Path
    from planner.commands import signals
    from planner.report import files

    signals.route()
    folder = Path(sys.argv[1])
    renamed = []
    real_replace = os.replace

    def replace(src, dst):  # Ctrl-C arrives between the first rename and the second
        real_replace(src, dst)
        renamed.append(dst)
        if len(renamed) == 1:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.3)  # unheld, the interrupt would land here, with one file of two renamed

    files.os.replace = replace
    try:
        with signals.held():
            files.write_all({folder / "a.json": "a" * 100_000, folder / "b.csv": "b" * 100_000})
        time.sleep(2)
        print("not interrupted")
    except KeyboardInterrupt:
        print("interrupted after", len(renamed), "renames")
    """
)


def test_ctrl_c_between_stage_and_rename_leaves_every_file_whole_and_no_temporaries(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-c", OUTPUTS_UNDER_CTRL_C, str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=RUN_LIMIT_S,
    )
    assert run.stdout.strip() == "interrupted after 2 renames", run.stdout + run.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.csv"]  # no .tmp left
    assert (tmp_path / "a.json").read_text() == "a" * 100_000


def test_the_deadline_alarm_cuts_python_work_until_the_run_has_its_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process: after the deadline, SIGALRM raises OutOfTime in plain Python code (options, model
    building), not once the run has its answer, and again inside a section that may be cut."""
    from planner.errors import OutOfTime
    from planner.optimize import budget

    monkeypatch.setattr(budget, "WALL_GRACE_S", 0.0)
    monkeypatch.setattr(budget, "ALARM_GRACE_S", 0.05)
    monkeypatch.setattr(budget, "ALARM_EVERY_S", 0.2)

    def busy(seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            pass

    with budget.run_budget(0.01, alarm=True):
        with pytest.raises(OutOfTime):
            busy(5.0)
        budget.settle()
        busy(0.3)  # not cut: the run has its answer
        with pytest.raises(OutOfTime), budget.cuttable():
            busy(5.0)
    assert signal.getsignal(signal.SIGALRM) == signal.SIG_DFL
