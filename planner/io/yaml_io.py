"""Safe YAML loading that remembers where every value came from.

PyYAML's safe loader constructs no objects, but it also reads ``1e12`` as a
string (YAML 1.1), ``1:30`` as 90 (base 60), ``010`` as 8 (octal), and silently
keeps the last of two duplicate keys. All would surprise users of a planning
tool, so this loader fixes them, refuses numbers with absurdly many digits, and
records the line of every mapping key, so schema errors can name the line.
Files are read by ``planner.io.files`` (regular files only, bounded, UTF-8).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import yaml

from planner.errors import InputError, Where
from planner.io.files import MAX_DIGITS, excerpt
from planner.io.files import MAX_FILE_BYTES as MAX_FILE_BYTES  # re-exported: the one bounded reader is in files
from planner.io.files import read_input_text as read_input_text

MAX_NODES = 200_000  # after alias expansion: refuses "billion laughs" documents

_INT_TAG = "tag:yaml.org,2002:int"
_FLOAT_TAG = "tag:yaml.org,2002:float"

_FLOAT_RE = re.compile(
    r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
    |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
    |\.[0-9_]+(?:[eE][-+]?[0-9]+)?
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""",
    re.X,
)
# YAML 1.1 without its traps: no base 60 (`1:30` is text, not 90) and no octal (`010` is 10, not 8).
_INT_RE = re.compile(r"^(?:[-+]?0b[01_]+|[-+]?0x[0-9a-fA-F_]+|[-+]?[0-9][0-9_]*)$")
_SEXAGESIMAL_RE = re.compile(r"^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,79}$")  # as the schema's NAME_PATTERN
_SPECIAL_FLOATS = {".inf": math.inf, "+.inf": math.inf, "-.inf": -math.inf, ".nan": math.nan}


class _Loader(yaml.SafeLoader):
    pass


# YAML 1.2 floats: `6e11` and `1.0e9` are numbers, as users mean them.
_Loader.yaml_implicit_resolvers = {
    key: [(tag, regexp) for tag, regexp in resolvers if tag not in {_FLOAT_TAG, _INT_TAG}]
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.copy().items()
}
_Loader.add_implicit_resolver(_FLOAT_TAG, _FLOAT_RE, list("-+0123456789."))
_Loader.add_implicit_resolver(_INT_TAG, _INT_RE, list("-+0123456789"))


def is_sexagesimal(text: str) -> bool:
    """``1:30``: a base-60 number in YAML 1.1 (90), text for this loader."""
    return bool(_SEXAGESIMAL_RE.match(text))


class NumberError(InputError):
    """A number the planner will not read (too many digits, `1:30`, not a number at all)."""


def parse_int(text: str) -> int | None:
    """A YAML whole number as this loader reads it (None: not one, or too long to be sane)."""
    body = text.replace("_", "")
    if not _INT_RE.match(text) or sum(ch.isdigit() for ch in body) > MAX_DIGITS:
        return None
    sign = -1 if body.startswith("-") else 1
    body = body.lstrip("+-")
    base = {"0b": 2, "0x": 16}.get(body[:2].lower(), 10)
    return sign * int(body[2:] if base != 10 else body, base)


def parse_float(text: str) -> float | None:
    """A YAML float as this loader reads it (None: not one, or too long to be sane)."""
    body = text.replace("_", "")
    if body.lower() in _SPECIAL_FLOATS:
        return _SPECIAL_FLOATS[body.lower()]
    if ":" in body or sum(ch.isdigit() for ch in body) > MAX_DIGITS:
        return None
    try:
        return float(body)
    except ValueError:
        return None


def _construct_number(loader: yaml.SafeLoader, node: yaml.Node) -> int | float:
    # `_walk` has refused bad numbers with the key and line already; this guards direct use.
    text = str(loader.construct_scalar(node))  # type: ignore[arg-type]
    value = parse_int(text) if node.tag == _INT_TAG else parse_float(text)
    if value is None:
        raise yaml.constructor.ConstructorError(None, None, f"{excerpt(text)} is not a number", node.start_mark)
    return value


_Loader.add_constructor(_INT_TAG, _construct_number)
_Loader.add_constructor(_FLOAT_TAG, _construct_number)


Path_ = tuple[str | int, ...]
_KEY_TAGS = {"tag:yaml.org,2002:str", "tag:yaml.org,2002:merge"}  # `<<: *defaults` shares settings

# PyYAML's wording of common slips -> what the user most likely has to change.
_HINTS = (
    ("mapping values are not allowed", "check the indentation here and on the line before"),
    ("character '\\t' that cannot start", "indent with spaces, not tabs"),
    ("could not find expected ':'", "check the indentation, or quote a value that contains ': '"),
)


def load_yaml(path: Path) -> tuple[Any, dict[Path_, int]]:
    """Load a YAML file; return the data and a map from key path to 1-based line."""
    return loads_yaml(read_input_text(path, "a YAML file"), str(path))


def loads_yaml(text: str, name: str = "<string>") -> tuple[Any, dict[Path_, int]]:
    if not text.strip():
        raise InputError("the file is empty", file=name, hint="start from problems/startup.yaml")
    lines: dict[Path_, int] = {}
    try:
        node = _compose(text, name)
        # No node, or a lone null ("---", "~"): nothing to plan either way.
        if node is None or (isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:null"):
            raise InputError("the file is empty", file=name, hint="start from problems/startup.yaml")
        _walk(node, (), lines, name, [0])
        data = _Loader("").construct_document(node)
    except yaml.MarkedYAMLError as exc:
        # Only constructor errors get here (a tag such as !!python/object): refused, never run.
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        raise InputError(
            f"unsupported YAML: {exc.problem or exc.context}",
            file=name,
            key=_key_on_line(lines, line),
            line=line,
            hint="plain mappings, lists, numbers and strings only",
        ) from None
    except RecursionError:
        # PyYAML composes and constructs recursively: thousands of nested brackets overflow the stack.
        raise InputError("the document is nested too deeply; refusing it", file=name) from None
    return data, lines


def _compose(text: str, name: str) -> yaml.Node | None:
    """Parse ``text`` into one node graph (aliases shared, not yet expanded)."""
    try:
        # The reader checks for control characters as soon as it is built: keep it inside the try.
        loader = _Loader(text)
    except yaml.reader.ReaderError as exc:
        line = text[: exc.position].count("\n") + 1
        raise InputError(
            f"malformed YAML: control character #x{exc.character:04x} is not allowed", file=name, line=line
        ) from None
    try:
        return loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        hint = next((h for phrase, h in _HINTS if phrase in str(exc.problem)), None)
        raise InputError(f"malformed YAML: {_describe(exc)}", file=name, line=_line(exc), hint=hint) from None
    except yaml.YAMLError as exc:
        raise InputError(f"malformed YAML: {exc}", file=name) from None
    finally:
        loader.dispose()


def _line(exc: yaml.MarkedYAMLError) -> int | None:
    mark = exc.problem_mark or exc.context_mark
    return mark.line + 1 if mark else None


def _describe(exc: yaml.MarkedYAMLError) -> str:
    """PyYAML's problem plus its context: an unclosed bracket is found lines after it was opened."""
    problem = exc.problem or exc.context or "malformed YAML"
    if exc.problem and exc.context and exc.problem.startswith("but "):
        return f"{exc.context}, {exc.problem}"  # "expected a single document..., but found another"
    # The context helps only when it points elsewhere: "(while parsing a flow sequence started on line 35)".
    if exc.context and exc.context_mark and exc.problem_mark and exc.context_mark.line != exc.problem_mark.line:
        problem += f" ({exc.context} started on line {exc.context_mark.line + 1})"
    return problem


def _key_on_line(lines: dict[Path_, int], line: int | None) -> str | None:
    """The dotted key written on ``line`` (the deepest), to name it in an error."""
    # Deepest *key* on the line: `name: !!tag [a]` is about `name`, not `name[0]`.
    found = [path for path, at in lines.items() if at == line and path and isinstance(path[-1], str)]
    if not found:
        return None
    return dotted_path(max(found, key=len))


def dotted_path(path: Path_) -> str:
    """``('catalog', 'exclude', 0)`` -> ``catalog.exclude[0]``."""
    return "".join(f"[{x}]" if isinstance(x, int) else f".{x}" if i else str(x) for i, x in enumerate(path))


def _walk(
    node: yaml.Node, path: Path_, lines: dict[Path_, int], name: str, count: list[int], shown: Path_ = ()
) -> None:
    """Record lines, refuse what the constructor would mangle; ``shown`` names list items by their name."""
    count[0] += 1
    if count[0] > MAX_NODES:
        raise InputError(f"the document expands to more than {MAX_NODES:,} values; refusing it", file=name)
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, int] = {}
        for key_node, value_node in node.value:
            line = key_node.start_mark.line + 1
            # Every key of the format is text; `1:`, `null:`, `yes:` or `[a, b]:` is a slip, and a
            # list key would crash the constructor ("unhashable") with a far worse message.
            if not (isinstance(key_node, yaml.ScalarNode) and key_node.tag in _KEY_TAGS):
                got = excerpt(key_node.value) if isinstance(key_node, yaml.ScalarNode) else "a list or mapping"
                raise InputError(
                    f"keys must be text, got {got if key_node.value != '' else 'an empty key'}",
                    file=name,
                    key=dotted_path(path) or None,
                    line=line,
                    hint="put the key in quotes" if isinstance(key_node, yaml.ScalarNode) else None,
                )
            key = key_node.value
            if key in seen:
                raise InputError(
                    f"duplicate key {excerpt(key)} (first on line {seen[key]})",
                    file=name,
                    key=dotted_path((*path, key)),
                    line=line,
                    hint="YAML would silently keep only the last one; delete one",
                )
            seen[key] = line
            lines[(*path, key)] = line
            _walk(value_node, (*path, key), lines, name, count, (*shown, key))
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk(item, (*path, index), lines, name, count, (*shown, _item_label(item, index)))
    elif isinstance(node, yaml.ScalarNode) and node.tag in {_INT_TAG, _FLOAT_TAG}:
        _check_number(node, shown, name)


def _item_label(item: yaml.Node, index: int) -> str | int:
    """A list item's `name` (as error messages name workloads), else its index."""
    if isinstance(item, yaml.MappingNode):
        for key_node, value_node in item.value:
            if key_node.value == "name" and isinstance(value_node, yaml.ScalarNode):
                return value_node.value if _NAME_RE.match(value_node.value) else index
    return index


def _check_number(node: yaml.ScalarNode, path: Path_, name: str) -> None:
    """A number (plain, or tagged `!!int`/`!!float`) the loader can read, or one error with its key."""
    text = str(node.value)
    where: Where = {"file": name, "key": dotted_path(path) or None, "line": node.start_mark.line + 1}
    digits = sum(ch.isdigit() for ch in text)
    if digits > MAX_DIGITS:
        raise NumberError(f"a number with {digits:,} digits is beyond any sane value (at most {MAX_DIGITS})", **where)
    if is_sexagesimal(text):
        raise NumberError(
            f"{excerpt(text)} is not a number",
            hint="YAML 1.1 would read 1:30 as 90 (base 60); write the value as one number",
            **where,
        )
    value = parse_int(text) if node.tag == _INT_TAG else parse_float(text)
    if value is None:
        kind = "a whole number" if node.tag == _INT_TAG else "a number"
        raise NumberError(f"{excerpt(text)} is not {kind}", **where)


def line_of(lines: dict[Path_, int], loc: Path_) -> int | None:
    """The line of the deepest known prefix of ``loc``."""
    for end in range(len(loc), -1, -1):
        found = lines.get(tuple(loc[:end]))
        if found is not None:
            return found
    return None
