"""Every name a problem uses (GPUs, chassis, classes, fabrics, topologies, models) exists in the
catalog it plans from; an unknown one is an input error with a did-you-mean."""

from __future__ import annotations

from planner.catalog import Catalog, suggest
from planner.errors import InputError
from planner.io.problem_io import LoadedProblem
from planner.io.yaml_io import dotted_path
from planner.perf.speculation import mtp_params_b
from planner.schema.catalog import DEPLOYMENT_CLASSES
from planner.schema.fabric import TOPOLOGIES
from planner.schema.model_ref import ConfigModel, InlineModel
from planner.schema.problem import InferenceService, TrainingJob


def check_references(loaded: LoadedProblem, catalog: Catalog) -> None:
    """Every GPU and model the problem names must exist in the catalog."""
    p = loaded.problem
    for index, name in enumerate(p.catalog.exclude):
        _need_excludable(loaded, catalog, name, ("catalog", "exclude", index))
    for table in ("prices_usd", "stock", "price_decline_per_year", "rent_usd_per_gpu_hour"):
        for gpu in getattr(p.catalog, table):
            if table == "price_decline_per_year" and gpu == "default":
                continue
            _need_gpu(loaded, catalog, gpu, ("catalog", table, gpu))
    workloads: list[tuple[str, int, TrainingJob | InferenceService]] = [
        *(("training", i, j) for i, j in enumerate(p.training)),
        *(("inference", i, s) for i, s in enumerate(p.inference)),
    ]
    for index, svc in enumerate(p.inference):
        for row, entry in enumerate(svc.measured):
            _need_gpu(loaded, catalog, entry.gpu, ("inference", index, "measured", row, "gpu"))
    for kind, index, item in workloads:
        if item.model is None or isinstance(item.model, InlineModel | ConfigModel):
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
    for index, svc in enumerate(p.inference):
        _check_speculative(loaded, catalog, index, svc)


def _check_speculative(loaded: LoadedProblem, catalog: Catalog, index: int, svc: InferenceService) -> None:
    """A draft model must be in the catalog; ``mtp: true`` needs a model with MTP heads."""
    spec = svc.speculative
    if spec is None:
        return
    draft = spec.draft_model
    if isinstance(draft, str) and catalog.find_model_id(draft) is None:
        raise InputError(
            f"unknown draft model {draft!r}",
            file=loaded.file,
            key=f"inference.{svc.name}.speculative.draft_model",
            line=loaded.line("inference", index, "speculative", "draft_model"),
            hint=suggest(draft, list(catalog.models)) or "use a name from `planner catalog models` or {params_b: ...}",
        )
    if spec.mtp and mtp_params_b(svc.model, catalog) is None:
        name = svc.model if isinstance(svc.model, str) else "this model"
        with_heads = [m.id for m in catalog.models.values() if m.mtp_params_b]
        raise InputError(
            f"model {name!r} has no multi-token-prediction heads (no mtp_params_b in the catalog), so mtp: true "
            "cannot apply",
            file=loaded.file,
            key=f"inference.{svc.name}.speculative.mtp",
            line=loaded.line("inference", index, "speculative", "mtp"),
            hint=f"give a draft_model instead, or serve a model with MTP heads ({', '.join(with_heads) or 'none'})",
        )


def _need_excludable(loaded: LoadedProblem, catalog: Catalog, name: str, loc: tuple[str | int, ...]) -> None:
    """``catalog.exclude`` names a GPU id, a chassis id, a deployment class, a scale-out fabric
    id or a topology."""
    fabrics = [k for k, f in catalog.fabrics.items() if f.kind != "none"]
    known = [*catalog.gpus, *catalog.servers, *DEPLOYMENT_CLASSES, *fabrics, *TOPOLOGIES]
    if name.lower() not in {k.lower() for k in known}:
        raise InputError(
            f"unknown GPU {name!r} (nor a chassis, a class, a fabric or a topology)",
            file=loaded.file,
            key=dotted_path(loc),
            line=loaded.line(*loc),
            hint=suggest(name, known)
            or "see `planner catalog gpus`, `planner catalog servers` and `planner catalog fabrics`",
        )


def _need_gpu(loaded: LoadedProblem, catalog: Catalog, gpu: str, loc: tuple[str | int, ...]) -> None:
    if catalog.find_gpu_id(gpu) is None:
        raise InputError(
            f"unknown GPU {gpu!r}",
            file=loaded.file,
            key=dotted_path(loc),
            line=loaded.line(*loc),
            hint=suggest(gpu, list(catalog.gpus)) or "see `planner catalog gpus`",
        )
