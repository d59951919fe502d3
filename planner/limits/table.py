"""Reading the table: every limit of a problem, and a plan's limits report."""

from __future__ import annotations

from typing import TYPE_CHECKING

from planner import limits
from planner.limits.base import Family, Limit, Measured
from planner.schema.plan import ConstraintRow

if TYPE_CHECKING:
    from planner.catalog import Catalog
    from planner.schema.problem import Problem


def every_limit(problem: Problem, catalog: Catalog) -> list[tuple[Family, Limit]]:
    """Each limit the problem sets, with its family, in the table's order."""
    return [(fam, lim) for fam in limits.FAMILIES for lim in fam.limits(problem, catalog)]


def find(problem: Problem, catalog: Catalog, name: str) -> tuple[Family, Limit] | None:
    return next(((f, lim) for f, lim in every_limit(problem, catalog) if lim.name == name), None)


def row_limit(fam: Family, limit: Limit, m: Measured) -> float:
    """The limit as the report states it (the service rate: its tightest year's demand)."""
    own = getattr(fam, "row_limit", None)
    return float(own(limit, m)) if own else limit.value


def constraint_rows(problem: Problem, catalog: Catalog, m: Measured) -> list[ConstraintRow]:
    """One row per limit: the quantity the model enforces, its slack, and whether less than
    one purchase unit is left (``tight``). ``binding`` stays unknown until a re-solve says."""
    rows = []
    for fam, lim in every_limit(problem, catalog):
        used = fam.used(m, lim)
        shown = row_limit(fam, lim, m)
        slack = used - shown if fam.at_least else shown - used
        step = fam.step(lim, m, catalog)
        rows.append(
            ConstraintRow(
                name=lim.name,
                path=lim.path or "",
                limit=shown,
                used=round(used, 6),
                slack=round(slack, 6),
                unit=fam.unit,
                binding=None,
                tight=slack < fam.purchase_unit(lim, m, catalog) - 1e-9,
                step=step,
            )
        )
    return rows
