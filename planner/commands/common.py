"""What every command shares: the two consoles, user errors as exit codes, the problem argument.

Exit codes: 0 a plan was found; 1 no feasible plan exists; 2 the input is wrong; 3 no plan was
found within the time limit and feasibility is unknown; 130 interrupted (Ctrl-C; 143 SIGTERM),
nothing partial written; 141 the reader of the output went away (``planner ... | head``), quietly.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, ParamSpec, TypeVar, cast

import typer

from planner.commands.signals import exit_code
from planner.errors import CatalogError, InputError, OutOfTime, PlannerError, TimeLimitError

if TYPE_CHECKING:
    from rich.console import Console

EXIT_INFEASIBLE = 1
EXIT_INPUT = 2
EXIT_TIME_LIMIT = 3
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what `yes | head` reports for `yes`


@functools.cache
def _console_class() -> type[Console]:
    from rich.console import Console

    class _Console(Console):
        """A console whose reader went away ends the run quietly (rich would exit 1, the infeasible code)."""

        def on_broken_pipe(self) -> None:
            self.quiet = True
            raise BrokenPipeError

    return _Console


class _Deferred:
    """A rich console made at its first use. rich's console and text modules take 0.02 s to
    import, before the options' workers could start; a quiet solve on a file or pipe prints
    nothing, and a run that prints imports them beside the workers (``cli._import_solver``).
    Everything is the console's: attributes, ``with``, and rich's own objects given it."""

    __slots__ = ("_kwargs", "_made")

    def __init__(self, **kwargs: Any) -> None:
        object.__setattr__(self, "_kwargs", kwargs)
        object.__setattr__(self, "_made", None)

    def _console(self) -> Console:
        made: Console | None = object.__getattribute__(self, "_made")
        if made is None:
            made = _console_class()(**object.__getattribute__(self, "_kwargs"))
            object.__setattr__(self, "_made", made)
        return made

    def __getattr__(self, name: str) -> Any:
        return getattr(self._console(), name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._console(), name, value)

    def __enter__(self) -> Console:
        return self._console().__enter__()

    def __exit__(self, *exc: Any) -> None:
        self._console().__exit__(*exc)


# Piped output gets a fixed width, so tables do not wrap at 80 columns in logs. No emoji codes:
# the planner writes none, and in user text (a service named ":fire:") they are data; reading
# them also imported rich's emoji table at the first status line (2 ms of every solve).
out = cast("Console", _Deferred(highlight=False, emoji=False, width=None if sys.stdout.isatty() else 140))
err = cast("Console", _Deferred(stderr=True, highlight=False, emoji=False))


def working(message: str) -> AbstractContextManager[object]:
    """The status line on stderr while a step runs: a spinner on a terminal. Elsewhere (a file,
    a pipe, a dumb terminal) rich's transient status shows nothing, and nothing is started for
    it. ``message`` is plain text: as a string, rich would read markup and emoji codes in it
    (the emoji table's import alone was 2 ms at the simulation's start)."""
    if not shows_status():
        return contextlib.nullcontext()
    from rich.text import Text

    return err.status(Text(message))


def escape(text: str) -> str:
    """rich's ``markup.escape``, imported when a message is printed: messages quote user input,
    and ``"[red]"`` in a name is text, not a style."""
    from rich.markup import escape as escaped

    return escaped(text)


def shows_status() -> bool:
    """Whether a status line on stderr shows (as rich's ``Live.refresh`` decides)."""
    return err.is_jupyter or (err.is_terminal and not err.is_dumb_terminal)


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
