"""The typer app with only the command a run names, while it runs.

typer turns every command's signature into click's parameters on each start: 0.018 s of every
run, half of it for the commands not run, and 4 ms more for a sub-app's (`estimate`) commands.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import typer
from typer.main import get_command_name
from typer.models import CommandInfo


@contextlib.contextmanager
def only_command(app: typer.Typer, first: list[str]) -> Iterator[None]:
    """``app`` holding only the command ``first`` names (the first argument), its sub-apps
    empty. Help, a name no command has (a sub-app's, say), or none: every command, as listed."""
    every = app.registered_commands
    inner = [(group, group.registered_commands) for group in _groups(app)]
    named = [c for c in every if first and command_name(c) == first[0]]
    if named:  # the groups stay, empty: with one command and no group, typer makes no group
        app.registered_commands = named
        for group, _ in inner:
            group.registered_commands = []
    try:
        yield
    finally:
        app.registered_commands = every
        for group, commands in inner:
            group.registered_commands = commands


def command_name(command: CommandInfo) -> str:
    """The name a command is run by (typer's, from its function when it was given none)."""
    return command.name or get_command_name(command.callback.__name__ if command.callback else "")


def _groups(app: typer.Typer) -> list[typer.Typer]:
    return [info.typer_instance for info in app.registered_groups if info.typer_instance is not None]
