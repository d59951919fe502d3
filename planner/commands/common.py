"""What every command shares: the two consoles, user errors as exit codes, the problem argument.

Exit codes: 0 a plan was found; 1 no feasible plan exists; 2 the input is wrong; 3 no plan was
found within the time limit and feasibility is unknown; 130 interrupted (Ctrl-C; 143 SIGTERM),
nothing partial written; 141 the reader of the output went away (``planner ... | head``), quietly.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, NoReturn, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.markup import escape  # messages quote user input: "[red]" in a name is text, not a style

from planner.commands.signals import exit_code
from planner.errors import CatalogError, InputError, OutOfTime, PlannerError, TimeLimitError

EXIT_INFEASIBLE = 1
EXIT_INPUT = 2
EXIT_TIME_LIMIT = 3
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what `yes | head` reports for `yes`


class _Console(Console):
    """A console whose reader went away ends the run quietly (rich would exit 1, the infeasible code)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


# Piped output gets a fixed width, so tables do not wrap at 80 columns in logs.
out = _Console(highlight=False, width=None if sys.stdout.isatty() else 140)
err = _Console(stderr=True, highlight=False)

P = ParamSpec("P")
R = TypeVar("R")


def user_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Users see one clear line and an exit code, never a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return _flushed(fn, *args, **kwargs)
        except (InputError, CatalogError) as exc:
            _fail(str(exc), EXIT_INPUT)
        except TimeLimitError as exc:
            _fail(str(exc), EXIT_TIME_LIMIT)
        except PlannerError as exc:
            _fail(str(exc), EXIT_INFEASIBLE)
        except OutOfTime:
            _fail(str(TimeLimitError()), EXIT_TIME_LIMIT)
        except BrokenPipeError:
            _reader_gone()
        except OSError as exc:
            # A file the user named cannot be read or written (folder gone, no permission, disk
            # full) and no inner layer turned it into an InputError: still the user's input, exit 2.
            where = f"{exc.filename}: " if exc.filename else ""
            _fail(f"{where}{exc.strerror or exc}", EXIT_INPUT)
        except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM (planner.commands.signals)
            code = exit_code(exc)
            err.print("interrupted" if code == 130 else "terminated", markup=False)
            raise typer.Exit(code) from None

    return wrapper


def _flushed(fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """Run the command and flush stdout, so a reader that went away is seen here, not at exit."""
    try:
        result = fn(*args, **kwargs)
    except typer.Exit:
        sys.stdout.flush()
        raise
    sys.stdout.flush()
    return result


def _fail(message: str, code: int) -> NoReturn:
    err.print(f"[bold red]error:[/bold red] {escape(message)}", markup=True, soft_wrap=True)
    raise typer.Exit(code) from None


def _reader_gone() -> NoReturn:
    """Stdout's reader went away: end quietly. As the Python docs advise (signal, "Note on SIGPIPE"),
    stdout now points at /dev/null, so the interpreter's last flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a file (a test's capture): nothing to flush at exit
        pass
    raise typer.Exit(EXIT_BROKEN_PIPE) from None


ProblemArg = Annotated[Path, typer.Argument(help="problem file (YAML)", show_default=False)]
