"""The project's own error types: caught once in the CLI, printed without a traceback."""

from __future__ import annotations


class PlannerError(Exception):
    """Base class for errors shown to users."""


class InputError(PlannerError):
    """The user's input is wrong (exit code 2).

    ``file``, ``key`` and ``line`` locate the problem; ``hint`` says how to fix it.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        key: str | None = None,
        line: int | None = None,
        hint: str | None = None,
    ) -> None:
        self.message = message
        self.file = file
        self.key = key
        self.line = line
        self.hint = hint
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
        return text


class CatalogError(PlannerError):
    """A bundled or user catalog is inconsistent (a bug in data, exit code 2)."""
