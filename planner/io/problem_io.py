"""Read a problem file into a validated ``Problem``, or fail with one clear message.

Schema errors name the file, the dotted key and the YAML line, and suggest the
closest valid key or catalog name.
"""

from __future__ import annotations

import datetime
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from planner.catalog import suggest
from planner.errors import InputError, Where
from planner.io.files import EXCERPT_CHARS, excerpt, loads_json, read_input_text, resolve_reference
from planner.io.requests_csv import bucket_requests, read_requests_csv
from planner.io.yaml_io import Path_, is_sexagesimal, line_of, load_yaml, loads_yaml
from planner.schema.model_ref import ConfigModel
from planner.schema.problem import NAME_PATTERN, InferenceService, Problem, TrainingJob


@dataclass(frozen=True)
class LoadedProblem:
    problem: Problem
    file: str
    lines: dict[Path_, int]
    raw: Any = None  # the mapping as read, for what-if overrides
    folder: Path | None = None  # where files the problem names live (None: the working directory)

    def line(self, *loc: str | int) -> int | None:
        return line_of(self.lines, loc)


def load_problem(path: str | Path) -> LoadedProblem:
    data, lines = load_yaml(Path(path))
    return parse_problem(data, lines, str(path), Path(path).parent, kept=Path(path))


def loads_problem(text: str, name: str = "<string>", folder: Path | None = None) -> LoadedProblem:
    data, lines = loads_yaml(text, name)
    return parse_problem(data, lines, name, folder)


def parse_problem(
    data: Any, lines: dict[Path_, int], name: str, folder: Path | None = None, kept: Path | None = None
) -> LoadedProblem:
    """A validated problem; files it names (a mix's `csv`) are read from inside ``folder``
    (None: the problem file's folder when ``name`` is a file, else the working directory).
    ``kept``: the problem file, whose validated problem is kept between runs (``problem_cache``)."""
    if folder is None:
        folder = Path(name).parent if not name.startswith("<") else Path.cwd()
    if not isinstance(data, dict):
        raise InputError(
            f"expected a mapping of keys (name, training, inference, ...), got {_kind_of(data)}",
            file=name,
            line=1,
        )
    try:
        expanded = _with_mix_csv(data, lines, name, folder)
        if kept is None:
            problem = Problem.model_validate(expanded)
        else:
            from planner.io.problem_cache import validated

            problem = validated(kept, expanded)
    except ValidationError as exc:
        raise _to_input_error(exc, data, lines, name) from None
    _read_model_configs(problem, data, lines, name, folder)
    return LoadedProblem(problem, name, lines, data, folder)


MAX_CONFIG_BYTES = 1_000_000  # a config.json is a few kB; a tokenizer or weights file is not one


def _read_model_configs(
    problem: Problem, data: dict[str, Any], lines: dict[Path_, int], name: str, folder: Path
) -> None:
    """`model: {config: path}`: the config.json beside the problem, read once into a catalog entry."""
    from planner.io.hf_config import model_from_config

    items: list[tuple[str, int, TrainingJob | InferenceService]] = [
        *(("training", i, j) for i, j in enumerate(problem.training)),
        *(("inference", i, s) for i, s in enumerate(problem.inference)),
    ]
    for section, index, item in items:
        if not isinstance(item.model, ConfigModel):
            continue
        loc = (section, index, "model", "config")
        where: Where = {"file": name, "key": dotted(loc, data), "line": line_of(lines, loc)}
        path = resolve_reference(item.model.config, folder, **where)
        text = read_input_text(path, "a model's config.json", MAX_CONFIG_BYTES, key=where.get("key"))
        model_id = Path(item.model.config).parent.name or path.stem  # HF layout: <model>/config.json
        entry, _ = model_from_config(loads_json(text, str(path)), model_id=model_id)
        item.model._entry = entry


def _with_mix_csv(data: dict[str, Any], lines: dict[Path_, int], name: str, folder: Path) -> dict[str, Any]:
    """Services whose mix is a CSV of observed requests get their buckets here (the file is
    relative to the problem file and must stay inside its folder); the raw mapping keeps the
    `csv` key for what-if runs."""
    services = data.get("inference")
    if not isinstance(services, list):
        return data
    expanded = []
    for index, svc in enumerate(services):
        mix = svc.get("mix") if isinstance(svc, dict) else None
        if not isinstance(mix, dict) or "csv" not in mix:
            expanded.append(svc)
            continue
        loc = ("inference", index, "mix", "csv")
        where: Where = {"file": name, "key": dotted(loc, data), "line": line_of(lines, loc)}
        if "buckets" in mix:
            raise InputError("give a mix as `buckets` or as `csv`, not both", **where)
        if not isinstance(mix["csv"], str) or not mix["csv"]:
            raise InputError("`csv` must be the path of a file of observed requests", **where)
        path = resolve_reference(mix["csv"], folder, **where)
        requests = read_requests_csv(path, str(folder / mix["csv"]), key=where.get("key"))
        edges = {k: mix[k] for k in ("input_edges", "output_edges") if isinstance(mix.get(k), list)}
        try:
            buckets = bucket_requests(requests, **edges)
        except TypeError:
            raise InputError("bucket edges must be lists of increasing token counts", **where) from None
        expanded.append({**svc, "mix": {**mix, "buckets": buckets}})
    return {**data, "inference": expanded}


def _kind_of(value: Any) -> str:
    """What a YAML author wrote, in their words rather than Python's."""
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    return "text" if isinstance(value, str) else type(value).__name__


def dotted(loc: tuple[Any, ...], data: Any) -> str:
    """``('training', 1, 'tokens')`` -> ``training.finetune-70b.tokens`` (lists by item name)."""
    text = ""
    node = data
    for item in loc:
        if isinstance(item, int):
            entry = node[item] if isinstance(node, list) and item < len(node) else None
            label = entry.get("name") if isinstance(entry, dict) else None
            # A name that is itself malformed ("[x]", "a b") would garble the path: use the index.
            valid = isinstance(label, str) and re.fullmatch(NAME_PATTERN, label)
            text += f".{label}" if valid and text else f"[{item}]"
            node = entry
        else:
            text += f".{item}" if text else str(item)
            node = node.get(item) if isinstance(node, dict) else None
    return text


def _model_at(loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The pydantic model owning the mapping at ``loc`` (for key suggestions)."""
    model: Any = Problem
    for item in loc:
        if isinstance(item, int):
            continue
        field = model.model_fields.get(item) if model else None
        if field is None:
            return None
        ann = field.annotation
        args = getattr(ann, "__args__", ())
        candidates = [ann, *args]
        model = next((c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)), None)
        if model is None:
            inner = [a for c in args for a in getattr(c, "__args__", ())]
            model = next((c for c in inner if isinstance(c, type) and issubclass(c, BaseModel)), None)
    return model


# Pydantic's wording of a wrong type -> what a YAML author should write instead.
_EXPECTED = {
    "dict_type": "expected a mapping (key: value lines or {key: value})",
    "model_type": "expected a mapping (key: value lines or {key: value})",
    "list_type": "expected a list ([a, b] or '- ' lines)",
    "float_type": "expected a number",
    "int_type": "expected a whole number",
    "int_from_float": "expected a whole number",
    "string_type": "expected text",
    "bool_type": "expected true or false",
    "finite_number": "expected a finite number",
}


_UNION_BRANCHES = {"str", "InlineModel", "ConfigModel"}


_VALIDATED_BRANCH = re.compile(r"^function-\w+\[.*, (\w+)\]$")  # a branch with a validator: its tag in a loc


_SHOULD = re.compile(r"^\w+ should( be)?")


_WORD = re.compile(r"[A-Za-z_][\w.\-]*")


def _to_input_error(exc: ValidationError, data: Any, lines: dict[Path_, int], name: str) -> InputError:
    # A typo'd key also makes a required key "missing": report the typo, it is the cause.
    # Otherwise the deepest location is the most specific (unions report one error per branch).
    # On a tie, a check's message beats a union branch's "not this type" (`model: {active > total}`).
    errors = sorted(
        exc.errors(), key=lambda e: (e["type"] != "extra_forbidden", -len(e["loc"]), _is_type_error(e["type"]))
    )
    err = errors[0]
    loc = _without_branches(err["loc"])
    kind = err["type"]
    hint = None
    got = err.get("input")
    if kind == "value_error":
        # Raised by a model validator: it checks several keys, so find the one to point at.
        located = _locate_value_error(loc, str(err["msg"]).removeprefix("Value error, "), data, lines, name)
        if located is not None:
            return located
    if kind == "extra_forbidden":
        owner = _model_at(loc[:-1])
        known = list(owner.model_fields) if owner else []
        hint = suggest(str(loc[-1]), known) or (f"known keys: {', '.join(known)}" if known else None)
        message = "unknown key"
    elif kind == "missing":
        message = "required key is missing"
    elif kind == "value_error":
        message = str(err["msg"]).removeprefix("Value error, ")
    elif any(_is_branch(x) for x in err["loc"]) and len(loc) == len(err["loc"]) - 1 and _is_type_error(kind):
        # `model: 5`: neither a catalog name nor an inline model.
        message = f"expected a model name or a mapping like {{params_b: 7}}, got {_shown(got)}"
        hint = "names: `planner catalog models`"
    elif kind in {"too_short", "too_long"}:
        bound = err.get("ctx", {}).get("min_length" if kind == "too_short" else "max_length")
        message = f"must have {'at least' if kind == 'too_short' else 'at most'} {bound} item(s), got {len(got or [])}"
    elif kind in _EXPECTED:
        message = f"{_EXPECTED[kind]}, got {_shown(got)}"
        hint = _type_hint(kind, got)
    else:
        # "String should match pattern ..." -> "must match pattern ...": keep the rest verbatim (regexes).
        message = f"{_SHOULD.sub(lambda m: 'must' + (m[1] or ''), err['msg'])}, got {_shown(got)}"
        if kind == "string_pattern_mismatch" and loc[-1:] == ("name",):
            message = f"must start with a letter or digit; then letters, digits, '_', '.', '-'; got {_shown(got)}"
    key = dotted(loc, data) or None
    return InputError(message, file=name, key=key, line=line_of(lines, loc), hint=hint, more=_distinct(errors) - 1)


def _distinct(errors: list[Any]) -> int:
    """Errors at distinct keys, not counting a union branch's "not this type" when another branch says more."""
    locs = [tuple(e["loc"]) for e in errors]

    def superseded(loc: tuple[Any, ...]) -> bool:
        return (
            bool(loc) and _is_branch(loc[-1]) and any(len(o) > len(loc) and o[: len(loc) - 1] == loc[:-1] for o in locs)
        )

    kept = {_without_branches(loc) for loc in locs if not superseded(loc)}
    return max(len(kept), 1)


def _without_branches(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(x for x in loc if not _is_branch(x))


def _is_branch(item: Any) -> bool:
    """A union branch's tag in an error location (`InlineModel`, `function-after[_check(), InlineModel]`)."""
    if not isinstance(item, str):
        return False
    validated = _VALIDATED_BRANCH.match(item)
    return (validated[1] if validated else item) in _UNION_BRANCHES


def _is_type_error(kind: str) -> bool:
    return kind in _EXPECTED or kind.endswith("_type")


def _shown(value: Any) -> str:
    if value is None:
        return "an empty value"
    if isinstance(value, (dict, list)):
        return "a mapping" if isinstance(value, dict) else "a list"
    if isinstance(value, str):
        return excerpt(value)
    text = repr(value)
    return text if len(text) <= EXCERPT_CHARS else text[:EXCERPT_CHARS] + "..."


def _type_hint(kind: str, got: Any) -> str | None:
    if kind in {"float_type", "int_type"} and isinstance(got, bool):
        return "YAML reads yes/no/on/off/true/false as booleans; write a number"
    if kind in {"float_type", "int_type"} and isinstance(got, str):
        if is_sexagesimal(got):
            return "YAML 1.1 would read 1:30 as 90 (base 60); write the value as one number"
        try:
            number = float(got.replace("_", ""))
        except ValueError:
            return None
        return "write the number without quotes" if math.isfinite(number) else "numbers must be finite"
    if kind == "string_type" and isinstance(got, (bool, int, float, datetime.date)):  # `name: 2024-01-01` is a date
        return "put the value in quotes to make it text"
    return None


def _locate_value_error(
    loc: tuple[Any, ...], message: str, data: Any, lines: dict[Path_, int], name: str
) -> InputError | None:
    """Point a model validator's error at the key it is about, by checking the (type-valid) raw data."""
    if loc == ():
        return _locate_problem_error(message, data, lines, name)
    # Item-level checks name the keys they compare ("release_day (50.0) must be before deadline_days",
    # "give growth_per_year or requests_per_s_by_year, not both"): point at the first one written.
    node: Any = data
    for item in loc:
        if isinstance(node, dict):
            node = node.get(item)
        elif isinstance(node, list) and isinstance(item, int) and item < len(node):
            node = node[item]
        else:
            return None
    if not isinstance(node, dict):
        return None
    for word in _WORD.findall(message):
        head, _, rest = word.partition(".")  # "prices_usd.H100-SXM must be ..."
        if head not in node:
            continue
        sub: tuple[str, ...] = (head, rest) if isinstance(node[head], dict) and rest in node[head] else (head,)
        where = (*loc, *sub)
        return InputError(message, file=name, key=dotted(where, data), line=line_of(lines, where))
    return None


def _locate_problem_error(message: str, data: dict[str, Any], lines: dict[Path_, int], name: str) -> InputError | None:
    """The cross-workload checks of ``Problem``: no workloads, duplicate names, `after` references and cycles."""
    items: list[tuple[str, int, dict[str, Any]]] = [
        (kind, i, item)
        for kind in ("training", "inference")
        for i, item in enumerate(data.get(kind) or [])
        if isinstance(item, dict) and isinstance(item.get("name"), str)
    ]
    if not items:
        present = next((k for k in ("training", "inference") if k in data), None)
        return InputError(
            "no workloads: a problem needs at least one item under `training` or `inference`",
            file=name,
            key=present,
            line=line_of(lines, (present,)) if present else None,
            hint="see problems/startup.yaml",
        )
    first_use: dict[str, tuple[str, int]] = {}
    for kind, i, item in items:
        label = item["name"].lower()
        if label in first_use:
            other_kind, other_i = first_use[label]
            other_line = line_of(lines, (other_kind, other_i, "name"))
            where: Path_ = (kind, i, "name")
            return InputError(
                f"name {item['name']!r} is already used by {other_kind}[{other_i}] on line {other_line} "
                "(workload names must be unique, ignoring case)",
                file=name,
                key=f"{kind}[{i}].name",
                line=line_of(lines, where),
            )
        first_use[label] = (kind, i)
    jobs = {item["name"].lower(): (i, item) for kind, i, item in items if kind == "training"}
    for i, item in jobs.values():
        for k, dep in enumerate(item.get("after") or []):
            where = ("training", i, "after", k)
            key = f"training.{item['name']}.after"
            if dep.lower() not in jobs:
                names = [j["name"] for _, j in jobs.values()]
                service = first_use.get(dep.lower(), ("", 0))[0] == "inference"
                return InputError(
                    f"names unknown training job {dep!r}",
                    file=name,
                    key=key,
                    line=line_of(lines, where),
                    hint=f"{dep!r} is an inference service; `after` waits for training jobs only"
                    if service
                    else suggest(dep, names) or f"training jobs: {', '.join(names)}",
                )
            if dep.lower() == item["name"].lower():
                return InputError("a job cannot run after itself", file=name, key=key, line=line_of(lines, where))
    if "cycle" in message:
        # The validator's message names the cycle; point at the `after` of its first job.
        cycle = message.rsplit(": ", 1)[-1].split(" -> ")
        start = jobs.get(cycle[0].lower())
        if start is not None:
            i, item = start
            return InputError(
                "`after` entries form a cycle: " + " -> ".join(cycle),
                file=name,
                key=f"training.{item['name']}.after",
                line=line_of(lines, ("training", i, "after")),
                hint="remove one of these `after` entries",
            )
    return None
