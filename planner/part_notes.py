"""What a buyer should know about the parts a plan buys: uncalibrated figures, end-of-life or
announced parts, long lead times and thin public data. Read off the catalog for the plan's
own servers, so the notes never speak of a part the plan does not buy."""

from __future__ import annotations

from planner.catalog import Catalog
from planner.schema.catalog import Gpu, ServerChassis
from planner.schema.plan import AdviceRow, ServerRow

LONG_LEAD_WEEKS = 12.0  # a quarter or more from order to delivery


def part_notes(servers: list[ServerRow], catalog: Catalog) -> list[AdviceRow]:
    notes: list[AdviceRow] = []
    seen: set[str] = set()
    for row in servers:
        for part in (catalog.gpus.get(row.gpu), catalog.servers.get(row.server)):
            if part is None or part.id in seen:
                continue
            seen.add(part.id)
            notes += [AdviceRow(kind="part", message=m) for m in _notes(part, catalog)]
    return notes


def _notes(part: Gpu | ServerChassis, catalog: Catalog) -> list[str]:
    out = []
    if part.lifecycle == "end-of-life":
        out.append(f"{part.id} is end-of-life: no longer sold new; expect refurbished stock and shorter support")
    if part.lifecycle == "announced":
        out.append(f"{part.id} is announced ({part.announced_date}), not shipping yet")
    if part.lead_time_weeks is not None and part.lead_time_weeks >= LONG_LEAD_WEEKS:
        out.append(f"{part.id}: lead time about {part.lead_time_weeks:g} weeks from order")
    if isinstance(part, Gpu):
        generation = catalog.efficiency.generations.get(part.generation)
        if generation is not None and not generation.calibrated:
            out.append(
                f"{part.id}: its efficiency ({part.generation}) is not yet calibrated against measurements; "
                "treat its throughput as an estimate"
            )
        if part.confidence == "low":
            out.append(f"{part.id}: public figures are thin or conflicting (confidence: low); see its catalog notes")
    return out
