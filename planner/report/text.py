"""User-given text made inert before it leaves the planner.

Problem names, descriptions, workload names, file names and error messages that quote them are
data, never instructions: not rich markup, not terminal escape sequences, not spreadsheet
formulas, not YAML. Every report goes through these helpers:

- ``printable(text)``: control characters (C0 except newline and tab, DEL, C1, bidirectional
  overrides) become visible escapes, so ``"\\x1b[2J"`` prints as the six characters ``\\x1b[2J``;
- ``markup(text)``: ``printable`` and escaped for rich markup, for f-strings printed with markup
  (``"[/bold] x"`` is text, not a closing tag; print them with ``emoji=False`` too, or
  ``":fire:"`` in a name becomes an emoji: the command line's consoles read no emoji codes);
- ``plain(text)``: a rich ``Text`` of ``printable(text)``, for table cells and titles: neither
  markup nor emoji codes are read in it;
- ``one_line(text)``: ``printable`` with line breaks escaped too (YAML comments, titles);
- ``cell(value)``: a spreadsheet or CSV cell that is never a formula (OWASP CSV injection);
- ``chart_text(text)``: ``printable`` with ``$`` escaped, so matplotlib does not read mathtext.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # rich is imported where it prints: the files' reports need none of it
    from rich.text import Text

# C0 controls except tab and newline, DEL, C1 controls (ESC starts every terminal sequence; C1
# holds the 8-bit CSI and OSC), and the Unicode bidirectional overrides and isolates, which
# reorder what a reader sees ("Trojan Source").
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# Line breaks too, as YAML 1.1 and most readers count them (newline, NEL, line/paragraph separator).
_CONTROL_OR_BREAK = re.compile(_CONTROL.pattern[:-1] + "\t\n\u2028\u2029]")
# OWASP: a cell starting with one of these may be run as a formula by a spreadsheet.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: object) -> str:
    """``text`` with every control character replaced by a visible escape (newline and tab kept)."""
    return _CONTROL.sub(_visible, str(text))


def one_line(text: object) -> str:
    """``printable``, and newlines and tabs escaped as well: the text cannot start a new line."""
    return _CONTROL_OR_BREAK.sub(_visible, str(text))


def markup(text: object) -> str:
    """Safe to interpolate into a rich markup string or a table cell: no tags, no escapes."""
    from rich.markup import escape

    return escape(printable(text))


def plain(text: object) -> Text:
    """A rich ``Text`` (no markup, no emoji codes) of ``printable(text)``: for table cells and titles."""
    from rich.text import Text

    return Text(printable(text))


def chart_text(text: object) -> str:
    """Safe for a matplotlib label: no control characters, ``$`` is a dollar sign, not mathtext."""
    return one_line(text).replace("$", r"\$")


def formula_safe(text: str) -> str:
    """A string a spreadsheet shows as text: prefixed with ``'`` when it could start a formula.

    Strings that are plain numbers (``-5``, ``+1e3``) are left alone: they are not formulas.
    """
    if text.startswith(FORMULA_START) and not _NUMBER.fullmatch(text):
        return "'" + text
    return text


def cell(value: Any) -> Any:
    """A spreadsheet or CSV cell: numbers, booleans and None as they are; strings printable and
    never a formula (characters that XML forbids are among those made visible)."""
    if isinstance(value, str):
        return formula_safe(printable(value))
    return value
