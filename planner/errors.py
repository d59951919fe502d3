"""The project's own error types: caught once in the CLI, printed without a traceback."""

from __future__ import annotations

from typing import TypedDict


class PlannerError(Exception):
    """Base class for errors shown to users."""


class Where(TypedDict, total=False):
    """Where in the input an error is: the keyword arguments ``InputError`` takes to locate it."""

    file: str | None
    key: str | None
    line: int | None


class InputError(PlannerError):
    """The user's input is wrong (exit code 2).

    ``file``, ``key`` and ``line`` locate the problem; ``hint`` says how to fix it; ``more`` counts
    the other errors found in the same input (one message is clearer than a wall of them).
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        key: str | None = None,
        line: int | None = None,
        hint: str | None = None,
        more: int = 0,
    ) -> None:
        self.message = message
        self.file = file
        self.key = key
        self.line = line
        self.hint = hint
        self.more = more  # further errors in the same input, reported after this one is fixed
        super().__init__(self.render())

    def render(self) -> str:
        where = self.file or ""
        if self.line is not None:
            where += f":{self.line}" if where else f"line {self.line}"
        parts = [f"{where}: " if where else ""]
        if self.key:
            parts.append(f"{self.key}: ")
        parts.append(self.message)
        text = "".join(parts)
        if self.hint:
            text += f" ({self.hint})"
        if self.more:
            text += f"; {self.more} more error(s) after this one"
        return text


class CatalogError(PlannerError):
    """A bundled or user catalog is inconsistent (a bug in data, exit code 2)."""


class TimeLimitError(PlannerError):
    """The time limit ran out before any plan was found, and no proof that none exists (exit code 3)."""

    def __init__(
        self, message: str = "no plan found within the time limit; feasibility unknown (raise --time-limit)"
    ) -> None:
        super().__init__(message)


class OutOfTime(BaseException):
    """The run's wall-clock deadline passed outside the solver (options, model building).

    A ``BaseException``, like ``KeyboardInterrupt``: raised asynchronously, it must not be taken
    for a failure of whatever step it interrupts (``except Exception`` would measure nothing and
    go on). The command line turns it into exit code 3.
    """


class Interrupted(KeyboardInterrupt):
    """SIGTERM, delivered like Ctrl-C: the run stops, cleans up and exits ``128 + signum``."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(f"signal {signum}")
