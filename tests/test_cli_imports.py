"""What the command line costs before it works: rich and pydantic's plugin loader are imported
only when used (``commands.common._Deferred``, ``commands.plugins``), status lines are plain
text, and the command named is built alone (``commands.only_command``)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

from rich.progress import Progress

from planner import cli
from planner.commands import common
from planner.commands.only_command import command_name, only_command

ROOT = Path(__file__).resolve().parent.parent

# The modules loaded when the options' first worker forks (the command line's serial start),
# and at the end of a quiet solve whose stderr is a pipe.
_AT_FORK = """
import json, os, sys
seen = {}
fork = os.fork
def first_fork():
    seen.setdefault("fork", sorted(sys.modules))
    return fork()
os.fork = first_fork
sys.argv = ["planner", "solve", "problems/startup.yaml", "--quiet"]
import planner.cli
try:
    planner.cli.main()
except SystemExit as exc:
    seen["code"] = exc.code
seen["end"] = sorted(sys.modules)
print(json.dumps(seen))
"""


def _loaded() -> dict[str, object]:
    env = {
        k: v for k, v in os.environ.items() if k not in ("PYDANTIC_DISABLE_PLUGINS", "FORCE_COLOR", "TTY_COMPATIBLE")
    }
    done = subprocess.run(
        [sys.executable, "-c", _AT_FORK], capture_output=True, text=True, cwd=ROOT, timeout=300, env=env
    )
    assert done.returncode == 0, done.stderr
    seen: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return seen


def test_a_quiet_solve_imports_rich_and_the_plugin_scan_only_where_they_cost_nothing() -> None:
    seen = _loaded()
    assert seen["code"] == 0
    at_fork, end = set(seen["fork"]), set(seen["end"])  # type: ignore[call-overload]
    assert "planner.options.parallel" in at_fork  # the fork recorded is the options' worker
    assert not {m for m in at_fork if m == "rich" or m.startswith("rich.")}
    assert "importlib.metadata" not in end
    assert "pydantic.plugin._loader" in end  # the stand-in, under the loader's name
    # stderr is a pipe: no status line shows, so neither rich's status nor its emoji table loads
    assert "rich.status" not in end and "rich._emoji_codes" not in end


_STAND_IN = """
import json, os, sys
from planner.commands.plugins import LOADER, skip_scan
installed = skip_scan()
import pydantic
class M(pydantic.BaseModel):
    x: int
assert M(x=1).x == 1
out = {"installed": installed, "metadata": "importlib.metadata" in sys.modules}
if installed:
    stand_in = sys.modules[LOADER]
    out["plugins"] = list(stand_in.get_plugins())
    out["group"] = stand_in.PYDANTIC_ENTRY_POINT_GROUP  # a name the stand-in lacks: the real one's
    out["real_now"] = sys.modules[LOADER] is not stand_in
print(json.dumps(out))
"""


def _stand_in(value: str | None) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    if value is not None:
        env["PYDANTIC_DISABLE_PLUGINS"] = value
    done = subprocess.run([sys.executable, "-c", _STAND_IN], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    found: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return found


def test_the_plugin_loaders_stand_in_answers_as_pydantic_would() -> None:
    for off in ("__all__", "1", "true"):
        found = _stand_in(off)
        assert found["installed"] and not found["metadata"] and found["plugins"] == []
        assert found["group"] == "pydantic" and found["real_now"]
    for on in (None, "", "some_plugin"):  # plugins looked for: pydantic's own loader
        found = _stand_in(on)
        assert not found["installed"] and found["metadata"]


def test_a_deferred_console_is_the_console_once_used() -> None:
    file = io.StringIO()
    console = common._Deferred(file=file, width=60, force_terminal=False, highlight=False, emoji=False)
    assert object.__getattribute__(console, "_made") is None  # nothing made until used
    console.print("[bold]a[/bold] :fire:")
    assert file.getvalue() == "a :fire:\n"  # markup read, emoji codes not
    with console:  # rich's Live enters the console it is given
        console.print("b")
    assert file.getvalue().endswith("b\n")
    with Progress(console=console, transient=False) as bar:  # type: ignore[arg-type]
        bar.add_task("task", total=1, completed=1)
    assert "task" in file.getvalue()
    console.quiet = True  # set on the console itself
    console.print("c")
    assert not file.getvalue().endswith("c\n")


def test_a_status_line_is_plain_text_and_only_on_a_terminal(monkeypatch: object) -> None:
    file = io.StringIO()
    terminal = common._Deferred(file=file, width=60, force_terminal=True, highlight=False, emoji=False)
    setattr_ = monkeypatch.setattr  # type: ignore[attr-defined]
    setattr_(common, "err", terminal)
    assert common.shows_status()
    with common.working(":fire: [red]x[/red]"):
        pass
    assert ":fire: [red]x[/red]" in file.getvalue()  # as typed: no emoji, no style
    setattr_(common, "err", common._Deferred(file=io.StringIO(), force_terminal=False))
    assert not common.shows_status()
    assert isinstance(common.working("solving"), contextlib.nullcontext)


def test_a_command_named_leaves_the_groups_empty_while_it_runs() -> None:
    group = cli.estimate_app
    every = list(group.registered_commands)
    assert len(every) == 2
    with only_command(cli.app, ["solve"]):
        assert group.registered_commands == []
        assert [command_name(c) for c in cli.app.registered_commands] == ["solve"]
        assert [g.name for g in cli.app.registered_groups] == ["estimate"]  # still a group of commands
    assert group.registered_commands == every
    with only_command(cli.app, ["estimate"]):  # a group named: every command
        assert group.registered_commands == every
    done = subprocess.run(
        [sys.executable, "-m", "planner", "estimate", "inference", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0 and "estimate inference" in done.stdout
