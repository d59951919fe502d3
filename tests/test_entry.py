"""The console script leaves without tearing the interpreter down (``planner.cli.entry``):
what it wrote must be all there, and its exit code the command's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "planner", *args], capture_output=True, text=True, cwd=ROOT, timeout=120
    )


def test_a_plan_piped_to_stdout_arrives_whole() -> None:
    done = _run("solve", "problems/qlora-workstation.yaml", "--json", "-", "--no-simulate", "--quiet")
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)  # the last byte flushed before the process left
    assert plan["status"] == "optimal" and plan["problem"] == "qlora-workstation"


def test_exit_codes_are_the_commands() -> None:
    assert _run("solve", "problems/infeasible-budget.yaml", "--quiet", "--no-simulate").returncode == 1
    missing = _run("solve", "no-such-problem.yaml")
    assert missing.returncode == 2 and "no-such-problem.yaml" in missing.stderr
    assert _run("--help").returncode == 0


def test_a_command_named_is_built_alone_and_help_lists_every_command() -> None:
    """``commands.only_command``: the app holds only the named command while it runs, every command
    otherwise (help, a misspelt name), and all of them again afterwards."""
    from planner import cli
    from planner.commands.only_command import command_name, only_command

    every = [command_name(c) for c in cli.app.registered_commands]
    assert {"solve", "whatif", "import-melange"} <= set(every)
    with only_command(cli.app, ["import-melange"]):
        assert [command_name(c) for c in cli.app.registered_commands] == ["import-melange"]
    for first in ([], ["--help"], ["soolve"], ["estimate"]):
        with only_command(cli.app, first):
            assert [command_name(c) for c in cli.app.registered_commands] == every
    assert [command_name(c) for c in cli.app.registered_commands] == every
    listed = _run("--help").stdout
    assert all(name in listed for name in every)
    wrong = _run("soolve", "problems/startup.yaml")
    assert wrong.returncode == 2 and "solve" in wrong.stderr  # click's "Did you mean" sees them all


_SCANS = """
import importlib.metadata, sys
scanned = []
real = importlib.metadata.distributions
importlib.metadata.distributions = lambda *a, **k: scanned.append(1) or real(*a, **k)
sys.argv = ["planner", "validate", "problems/startup.yaml"]
import planner.cli
try:
    planner.cli.main()
except SystemExit:
    pass
print(len(scanned))
"""


def test_pydantic_plugins_are_not_looked_for_unless_the_user_asks(tmp_path: Path) -> None:
    """``cli.main`` sets PYDANTIC_DISABLE_PLUGINS when the user has not: otherwise pydantic reads
    every installed distribution's entry points at the first model class (7-13 ms a run)."""
    import os

    def scans(**env: str) -> int:
        base = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
        # an empty cache each time: the problem is validated, not read as kept (io.problem_cache)
        base["PLANNER_CACHE_DIR"] = str(tmp_path / f"cache-{len(list(tmp_path.iterdir()))}")
        done = subprocess.run(
            [sys.executable, "-c", _SCANS], capture_output=True, text=True, cwd=ROOT, timeout=120, env=base | env
        )
        assert done.returncode == 0, done.stderr
        return int(done.stdout.strip().splitlines()[-1])

    assert scans() == 0
    assert scans(PYDANTIC_DISABLE_PLUGINS="") > 0  # the user's own setting: plugins looked for
