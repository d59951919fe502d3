"""Safe YAML loading that remembers where every value came from.

PyYAML's safe loader constructs no objects, but it also reads ``1e12`` as a
string (YAML 1.1) and silently keeps the last of two duplicate keys. Both would
surprise users of a planning tool, so this loader fixes them and records the
line of every mapping key, so schema errors can name the line.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from planner.errors import InputError

MAX_FILE_BYTES = 2_000_000
MAX_NODES = 200_000  # after alias expansion: refuses "billion laughs" documents

_FLOAT_RE = re.compile(
    r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
    |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
    |\.[0-9_]+(?:[eE][-+]?[0-9]+)?
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""",
    re.X,
)


class _Loader(yaml.SafeLoader):
    pass


# YAML 1.2 floats: `6e11` and `1.0e9` are numbers, as users mean them.
_Loader.yaml_implicit_resolvers = {
    key: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:float"]
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.copy().items()
}
_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT_RE, list("-+0123456789."))


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


def read_input_text(path: Path, expected: str, max_bytes: int = MAX_FILE_BYTES, encoding: str = "utf-8") -> str:
    """A user's input file as text, or one InputError naming the file (missing, a directory,
    unreadable, too large, not UTF-8 with the line of the first bad byte)."""
    name = str(path)
    try:
        if path.is_dir():
            raise InputError(f"is a directory, expected {expected}", file=name)
        # Read at most one byte past the limit: st_size is 0 for /dev/zero or a pipe, which never end.
        with path.open("rb") as fh:
            raw = fh.read(max_bytes + 1)
    except FileNotFoundError:
        raise InputError("file not found", file=name) from None
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror}", file=name) from None
    if len(raw) > max_bytes:
        raise InputError(f"file is larger than the limit of {max_bytes:,} bytes", file=name)
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError(
            f"is not UTF-8 text (byte 0x{raw[exc.start]:02x})", file=name, line=line, hint="save the file as UTF-8"
        ) from None


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


def _walk(node: yaml.Node, path: Path_, lines: dict[Path_, int], name: str, count: list[int]) -> None:
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
                shown = key_node.value if isinstance(key_node, yaml.ScalarNode) else "a list or mapping"
                raise InputError(
                    f"keys must be text, got {shown or 'an empty key'}",
                    file=name,
                    key=dotted_path(path) or None,
                    line=line,
                    hint="put the key in quotes" if isinstance(key_node, yaml.ScalarNode) else None,
                )
            key = key_node.value
            if key in seen:
                raise InputError(
                    f"duplicate key {key!r} (first on line {seen[key]})",
                    file=name,
                    key=dotted_path((*path, key)),
                    line=line,
                    hint="YAML would silently keep only the last one; delete one",
                )
            seen[key] = line
            lines[(*path, key)] = line
            _walk(value_node, (*path, key), lines, name, count)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk(item, (*path, index), lines, name, count)


def line_of(lines: dict[Path_, int], loc: Path_) -> int | None:
    """The line of the deepest known prefix of ``loc``."""
    for end in range(len(loc), -1, -1):
        found = lines.get(tuple(loc[:end]))
        if found is not None:
            return found
    return None
