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


def load_yaml(path: Path) -> tuple[Any, dict[Path_, int]]:
    """Load a YAML file; return the data and a map from key path to 1-based line."""
    name = str(path)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise InputError("file not found", file=name) from None
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror}", file=name) from None
    if path.is_dir():
        raise InputError("is a directory, expected a YAML file", file=name)
    if size > MAX_FILE_BYTES:
        raise InputError(f"file is {size:,} bytes; the limit is {MAX_FILE_BYTES:,}", file=name)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InputError("is not UTF-8 text", file=name) from None
    return loads_yaml(text, name)


def loads_yaml(text: str, name: str = "<string>") -> tuple[Any, dict[Path_, int]]:
    if not text.strip():
        raise InputError("the file is empty", file=name, hint="start from problems/startup.yaml")
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        problem = exc.problem or exc.context or "malformed YAML"
        raise InputError(f"malformed YAML: {problem}", file=name, line=line) from None
    except yaml.YAMLError as exc:
        raise InputError(f"malformed YAML: {exc}", file=name) from None
    finally:
        loader.dispose()
    if node is None:
        raise InputError("the file is empty", file=name, hint="start from problems/startup.yaml")
    lines: dict[Path_, int] = {}
    _walk(node, (), lines, name, [0])
    try:
        data = _Loader("").construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise InputError(
            f"unsupported YAML: {exc.problem or exc.context}",
            file=name,
            line=mark.line + 1 if mark else None,
            hint="plain mappings, lists, numbers and strings only",
        ) from None
    return data, lines


def _walk(node: yaml.Node, path: Path_, lines: dict[Path_, int], name: str, count: list[int]) -> None:
    count[0] += 1
    if count[0] > MAX_NODES:
        raise InputError(f"the document expands to more than {MAX_NODES:,} values; refusing it", file=name)
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, int] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise InputError(
                    f"duplicate key {key!r} (first on line {seen[key]})", file=name, line=line
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
