"""Everything derived from a problem before the solver runs: the problem, the catalog
it may buy from, and every workload's options."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from planner.bom import PoolKey
from planner.catalog import Catalog, load_catalog
from planner.io.catalog_refs import check_references
from planner.io.problem_io import LoadedProblem
from planner.options.build import build_options
from planner.options.types import WorkloadOptions
from planner.schema.problem import Problem


@dataclass
class Context:
    """Everything derived from a problem before the solver runs."""

    problem: Problem
    catalog: Catalog
    workloads: list[WorkloadOptions]
    loaded: LoadedProblem | None = None  # the file as read, for what-if variants
    kept: dict[PoolKey, tuple[int, int]] = field(default_factory=dict)  # already owned (solve --keep): (servers, racks)
    # the values of a solve of this problem's model by variable name (``pipeline.certified_plan``
    # with ``keep_start``): re-solves of it and of variants derived from it start there
    start: dict[str, int] | None = None


def prepare(
    loaded: LoadedProblem, base: Catalog | None = None, meanwhile: Callable[[], object] | None = None
) -> Context:
    """``meanwhile``: work of the caller's own, run while the options' worker processes estimate
    (the command line imports the solver then)."""
    base = base or load_catalog()
    check_references(loaded, base)
    p = loaded.problem
    vendors: list[str] | None = None if p.policy.vendors is None else list(p.policy.vendors)
    catalog = base.restricted(
        p.catalog.exclude, vendors, p.catalog.prices_usd, p.catalog.rent_usd_per_gpu_hour, allow=p.policy.allow
    )
    return Context(p, catalog, build_options(p, catalog, meanwhile=meanwhile), loaded)
