"""What every command shares: the two consoles, user errors as exit codes, the problem argument.

Exit codes: 0 a plan was found; 1 no feasible plan exists; 2 the input is wrong.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.markup import escape  # messages quote user input: "[red]" in a name is text, not a style

from planner.errors import CatalogError, InputError, PlannerError

# Piped output gets a fixed width, so tables do not wrap at 80 columns in logs.
out = Console(highlight=False, width=None if sys.stdout.isatty() else 140)
err = Console(stderr=True, highlight=False)

P = ParamSpec("P")
R = TypeVar("R")


def user_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Users see one clear line and an exit code, never a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except (InputError, CatalogError) as exc:
            err.print(f"[bold red]error:[/bold red] {escape(str(exc))}", markup=True, soft_wrap=True)
            raise typer.Exit(2) from None
        except PlannerError as exc:
            err.print(f"[bold red]error:[/bold red] {escape(str(exc))}", soft_wrap=True)
            raise typer.Exit(1) from None
        except OSError as exc:
            # A file the user named cannot be read or written (folder gone, no permission, disk
            # full) and no inner layer turned it into an InputError: still the user's input, exit 2.
            where = f"{exc.filename}: " if exc.filename else ""
            text = escape(f"{where}{exc.strerror or exc}")
            err.print(f"[bold red]error:[/bold red] {text}", markup=True, soft_wrap=True)
            raise typer.Exit(2) from None

    return wrapper


ProblemArg = Annotated[Path, typer.Argument(help="problem file (YAML)", show_default=False)]
