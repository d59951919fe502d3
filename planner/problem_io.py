"""Read a problem file into a validated ``Problem``, or fail with one clear message.

Schema errors name the file, the dotted key and the YAML line, and suggest the
closest valid key or catalog name.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from planner.catalog import Catalog, suggest
from planner.errors import InputError
from planner.schema.problem import InferenceService, InlineModel, Problem, TrainingJob
from planner.yaml_io import Path_, line_of, load_yaml, loads_yaml


@dataclass(frozen=True)
class LoadedProblem:
    problem: Problem
    file: str
    lines: dict[Path_, int]

    def line(self, *loc: str | int) -> int | None:
        return line_of(self.lines, loc)


def load_problem(path: str | Path) -> LoadedProblem:
    data, lines = load_yaml(Path(path))
    return parse_problem(data, lines, str(path))


def loads_problem(text: str, name: str = "<string>") -> LoadedProblem:
    data, lines = loads_yaml(text, name)
    return parse_problem(data, lines, name)


def parse_problem(data: Any, lines: dict[Path_, int], name: str) -> LoadedProblem:
    if not isinstance(data, dict):
        raise InputError(
            f"expected a mapping of keys (name, training, inference, ...), got {type(data).__name__}",
            file=name,
            line=1,
        )
    try:
        problem = Problem.model_validate(data)
    except ValidationError as exc:
        raise _to_input_error(exc, data, lines, name) from None
    return LoadedProblem(problem, name, lines)


def dotted(loc: tuple[Any, ...], data: Any) -> str:
    """``('training', 1, 'tokens')`` -> ``training.finetune-70b.tokens`` (lists by item name)."""
    parts: list[str] = []
    node = data
    for item in loc:
        if isinstance(item, int) and isinstance(node, list) and item < len(node):
            entry = node[item]
            label = entry.get("name") if isinstance(entry, dict) else None
            parts.append(str(label) if isinstance(label, str) else f"[{item}]")
            node = entry
        else:
            parts.append(str(item))
            node = node.get(item) if isinstance(node, dict) else None
    return ".".join(parts).replace(".[", "[")


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


def _to_input_error(exc: ValidationError, data: Any, lines: dict[Path_, int], name: str) -> InputError:
    # Union fields (str | InlineModel) report one error per branch: show the most specific.
    errors = sorted(exc.errors(), key=lambda e: -len(e["loc"]))
    err = errors[0]
    loc = tuple(x for x in err["loc"] if not (isinstance(x, str) and x in {"str", "InlineModel"}))
    key = dotted(loc, data)
    line = line_of(lines, loc)
    kind = err["type"]
    hint = None
    if kind == "extra_forbidden":
        owner = _model_at(loc[:-1])
        known = list(owner.model_fields) if owner else []
        hint = suggest(str(loc[-1]), known) or (f"known keys: {', '.join(known)}" if known else None)
        message = "unknown key"
    elif kind == "missing":
        message = "required key is missing"
    elif kind == "value_error":
        message = str(err["msg"]).removeprefix("Value error, ")
    else:
        got = err.get("input")
        shown = repr(got) if not isinstance(got, (dict, list)) else type(got).__name__
        message = f"{err['msg'].lower()}, got {shown}"
    if len(errors) > 1 and kind != "value_error":
        message += f" (and {len(errors) - 1} more error(s))" if _distinct(errors) > 1 else ""
    return InputError(message, file=name, key=key or None, line=line, hint=hint)


def _distinct(errors: list[Any]) -> int:
    return len({tuple(e["loc"][:-1]) if e["loc"] and e["loc"][-1] in {"str", "InlineModel"} else tuple(e["loc"]) for e in errors})


def check_references(loaded: LoadedProblem, catalog: Catalog) -> None:
    """Every GPU and model the problem names must exist in the catalog."""
    p = loaded.problem
    for section in ("exclude",):
        for index, gpu in enumerate(p.catalog.exclude):
            _need_gpu(loaded, catalog, gpu, ("catalog", section, index))
    for table in ("prices_usd", "stock", "price_decline_per_year"):
        for gpu in getattr(p.catalog, table):
            if table == "price_decline_per_year" and gpu == "default":
                continue
            _need_gpu(loaded, catalog, gpu, ("catalog", table, gpu))
    workloads: list[tuple[str, int, TrainingJob | InferenceService]] = [
        *(("training", i, j) for i, j in enumerate(p.training)),
        *(("inference", i, s) for i, s in enumerate(p.inference)),
    ]
    for kind, index, item in workloads:
        if isinstance(item.model, InlineModel):
            continue
        if catalog.find_model_id(item.model) is None:
            raise InputError(
                f"unknown model {item.model!r}",
                file=loaded.file,
                key=f"{kind}.{item.name}.model",
                line=loaded.line(kind, index, "model"),
                hint=suggest(item.model, list(catalog.models))
                or "use a name from `planner catalog models` or {params_b: ...}",
            )


def _need_gpu(loaded: LoadedProblem, catalog: Catalog, gpu: str, loc: tuple[str | int, ...]) -> None:
    if catalog.find_gpu_id(gpu) is None:
        raise InputError(
            f"unknown GPU {gpu!r}",
            file=loaded.file,
            key=".".join(str(x) for x in loc),
            line=loaded.line(*loc),
            hint=suggest(gpu, list(catalog.gpus)) or "see `planner catalog gpus`",
        )
