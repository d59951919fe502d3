"""The bundled catalogs, loaded once, with name lookup and a problem's overrides.

The YAML files live in the top-level ``catalogs/`` folder, where users read and edit them, and
are installed as the package ``planner.catalogs`` (pyproject.toml maps one to the other), so
``planner`` finds them from any working directory, after a regular or an editable install.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from importlib import resources
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from planner.catalog_cache import built_once
from planner.errors import CatalogError, InputError
from planner.fabric import expand
from planner.parse_cache import parsed
from planner.schema.catalog import CloudFile, Gpu, GpusFile, LlmModel, ModelsFile, Rental, ServerChassis
from planner.schema.efficiency import EfficiencyFile
from planner.schema.fabric import Fabric, FabricsFile
from planner.schema.facility import Frontend, LiquidCooling, Rack, ServersFile, Storage

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)
# libyaml's safe loader where the wheel has it: catalogs are read on every run.
_FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def suggest(name: str, choices: list[str]) -> str | None:
    """A "did you mean" hint, or None."""
    lowered = {c.lower(): c for c in choices}
    close = difflib.get_close_matches(name.lower(), list(lowered), n=3, cutoff=0.5)
    if not close:
        return None
    return "did you mean " + " or ".join(repr(lowered[c]) for c in close) + "?"


@dataclass(frozen=True)
class Catalog:
    gpus: dict[str, Gpu]
    servers: dict[str, ServerChassis]
    fabrics: dict[str, Fabric]
    models: dict[str, LlmModel]
    efficiency: EfficiencyFile
    rack: Rack
    liquid_cooling: LiquidCooling
    frontend: Frontend
    storage: Storage
    price_overrides_usd: dict[str, float] = field(default_factory=dict)
    rentals: dict[str, Rental] = field(default_factory=dict)
    rent_overrides_usd: dict[str, float] = field(default_factory=dict)

    def gpu(self, name: str) -> Gpu:
        return _lookup(self.gpus, name, "GPU")

    def model(self, name: str) -> LlmModel:
        return _lookup(self.models, name, "model")

    def fabric(self, name: str) -> Fabric:
        return _lookup(self.fabrics, name, "fabric")

    def find_gpu_id(self, name: str) -> str | None:
        return _find(self.gpus, name)

    def find_model_id(self, name: str) -> str | None:
        return _find(self.models, name)

    def gpu_price_usd(self, gpu_id: str) -> float:
        return self.price_overrides_usd.get(gpu_id, self.gpus[gpu_id].price.usd)

    def gpu_price_is_quote(self, gpu_id: str) -> bool:
        return gpu_id in self.price_overrides_usd

    def rent_usd_per_gpu_hour(self, gpu_id: str, pricing: str) -> float | None:
        """The hourly price to rent one GPU, or None where no cloud offers it (or renting is off)."""
        if pricing == "none":
            return None
        if gpu_id in self.rent_overrides_usd:
            return self.rent_overrides_usd[gpu_id]
        rental = self.rentals.get(gpu_id)
        if rental is None:
            return None
        return rental.reserved_usd_per_gpu_hour if pricing == "reserved" else rental.on_demand_usd_per_gpu_hour

    def restricted(
        self,
        exclude: list[str] | None = None,
        vendors: list[str] | None = None,
        prices_usd: dict[str, float] | None = None,
        rent_usd: dict[str, float] | None = None,
        allow: Collection[str] = (),
    ) -> Catalog:
        """A copy with only what the problem may buy, price quotes applied.

        By default: current data-centre parts. ``allow`` opts in to end-of-life or announced
        parts and to workstation, consumer or edge classes; ``exclude`` names GPU ids,
        chassis ids, classes, fabric ids (``ib-ndr-2to1``) or topologies (``rail-optimised``:
        every fabric wired so). A server left with no GPU goes too."""
        names = {n.lower() for n in exclude or []}

        def usable(part: Gpu | ServerChassis) -> bool:
            classes_ok = part.deployment_class == "datacenter" or part.deployment_class in allow
            life_ok = part.lifecycle == "current" or part.lifecycle in allow
            return classes_ok and life_ok and part.id.lower() not in names and part.deployment_class not in names

        gpus = {k: g for k, g in self.gpus.items() if usable(g) and (vendors is None or g.vendor in vendors)}
        servers = {}
        for key, chassis in self.servers.items():
            kept = [g for g in chassis.gpus if g in gpus]
            if kept and usable(chassis):
                servers[key] = chassis.model_copy(update={"gpus": kept})
        prices = {self.gpu(n).id: float(v) for n, v in (prices_usd or {}).items()}
        rents = {self.gpu(n).id: float(v) for n, v in (rent_usd or {}).items()}
        rentals = {k: v for k, v in self.rentals.items() if k in gpus}
        fabrics = {
            k: f
            for k, f in self.fabrics.items()
            if f.kind == "none" or (k.lower() not in names and f.topology not in names)
        }
        return replace(
            self,
            gpus=gpus,
            servers=servers,
            fabrics=fabrics,
            price_overrides_usd=prices,
            rentals=rentals,
            rent_overrides_usd={k: v for k, v in rents.items() if k in gpus},
        )


def _find(table: dict[str, T], name: str) -> str | None:
    lowered = name.lower()
    for key in table:
        if key.lower() == lowered:
            return key
    return None


def _lookup(table: dict[str, T], name: str, what: str) -> T:
    key = _find(table, name)
    if key is None:
        raise InputError(f"unknown {what} {name!r}", hint=suggest(name, list(table)))
    return table[key]


def _text(name: str) -> str:
    try:
        return (resources.files("planner.catalogs") / name).read_text(encoding="utf-8")
    except OSError as exc:
        raise CatalogError(f"bundled catalog {name} is invalid: {exc}") from exc


def _read(name: str, text: str, model: type[M]) -> M:
    try:
        try:
            return model.model_validate(parsed(name, text, _parse_yaml))
        except ValidationError:  # the file decides, not a cache entry altered since it was written
            return model.model_validate(_parse_yaml(text))
    except (yaml.YAMLError, ValidationError) as exc:
        raise CatalogError(f"bundled catalog {name} is invalid: {exc}") from exc


def _parse_yaml(text: str) -> Any:
    return yaml.load(text, Loader=_FAST_LOADER)


def _index(items: list[T], what: str) -> dict[str, T]:
    out: dict[str, T] = {}
    for item in items:
        key = item.id  # type: ignore[attr-defined]
        if key.lower() in {k.lower() for k in out}:
            raise CatalogError(f"duplicate {what} id {key!r} in the catalog")
        out[key] = item
    return out


CATALOG_FILES = ("gpus.yaml", "servers.yaml", "fabrics.yaml", "models.yaml", "efficiency.yaml", "cloud.yaml")


@functools.cache
def load_catalog() -> Catalog:
    """The bundled catalog: built from its files once, then kept between runs while they and
    the code that reads them are the same (``catalog_cache``)."""
    texts = {name: _text(name) for name in CATALOG_FILES}
    return built_once(texts, Catalog, lambda: built_catalog(texts))


def built_catalog(texts: dict[str, str]) -> Catalog:
    """The catalog made from the text of each of ``CATALOG_FILES``, validated."""
    gpus = _index(_read("gpus.yaml", texts["gpus.yaml"], GpusFile).gpus, "GPU")
    servers_file = _read("servers.yaml", texts["servers.yaml"], ServersFile)
    servers = _index(servers_file.servers, "server")
    fabrics = _index(expand(_read("fabrics.yaml", texts["fabrics.yaml"], FabricsFile)), "fabric")
    models = _index(_read("models.yaml", texts["models.yaml"], ModelsFile).models, "model")
    efficiency = _read("efficiency.yaml", texts["efficiency.yaml"], EfficiencyFile)
    rentals = {r.gpu: r for r in _read("cloud.yaml", texts["cloud.yaml"], CloudFile).rentals}
    catalog = Catalog(
        gpus,
        servers,
        fabrics,
        models,
        efficiency,
        servers_file.rack,
        servers_file.liquid_cooling,
        servers_file.frontend,
        servers_file.storage,
        rentals=rentals,
    )
    _check_consistent(catalog)
    return catalog


def _check_consistent(catalog: Catalog) -> None:
    """Cross-file checks: a GPU nobody can house, or a generation without factors, is a data bug."""
    housed = {g for s in catalog.servers.values() for g in s.gpus}
    for key, chassis in catalog.servers.items():
        for gpu_id in chassis.gpus:
            if gpu_id not in catalog.gpus:
                raise CatalogError(f"server {key} lists unknown GPU {gpu_id!r}")
    for key, gpu in catalog.gpus.items():
        if key not in housed:
            raise CatalogError(f"GPU {key} is in no server chassis")
        if gpu.generation not in catalog.efficiency.generations:
            raise CatalogError(f"GPU {key}: generation {gpu.generation!r} has no efficiency entry")
    for gpu_id in catalog.rentals:
        if gpu_id not in catalog.gpus:
            raise CatalogError(f"cloud.yaml rents unknown GPU {gpu_id!r}")
    if "none" not in catalog.fabrics:
        raise CatalogError("fabrics.yaml needs the 'none' fabric (single server)")
