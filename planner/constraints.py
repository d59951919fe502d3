"""The plan's named limits: how much of each the plan uses, its slack, and a natural step.

``binding`` here is the slack test (less than one step left); the re-solve test
of what loosening a limit is worth belongs to the explanations.
"""

from __future__ import annotations

from planner.schema.plan import ConstraintRow, InferenceRow, TrainingRow
from planner.schema.problem import Problem


def constraint_rows(
    problem: Problem,
    *,
    capex_usd: float,
    facility_kw: float,
    racks: int,
    max_rack_kw: float,
    max_rack_units: int,
    step_server_usd: float,
    step_server_kw: float,
    training: list[TrainingRow],
    inference: list[InferenceRow],
    gpus_bought: dict[str, int],
    gpus_by_year: dict[tuple[str, int], int] | None = None,
) -> list[ConstraintRow]:
    rows: list[ConstraintRow] = []
    fin, site = problem.finance, problem.site

    def add(
        name: str, path: str, limit: float | None, used: float, unit: str, step: float, *, at_least: bool = False
    ) -> None:
        slack = None if limit is None else (used - limit if at_least else limit - used)
        binding = slack is not None and slack < abs(step) - 1e-9
        rows.append(
            ConstraintRow(
                name=name,
                path=path,
                limit=limit,
                used=round(used, 6),
                slack=None if slack is None else round(slack, 6),
                unit=unit,
                binding=binding,
                step=step,
            )
        )

    if fin.budget_usd is not None:
        add("budget", "finance.budget_usd", fin.budget_usd, capex_usd, "usd", step_server_usd)
    if site.power_kw is not None:
        add("site_power", "site.power_kw", site.power_kw, facility_kw, "kw", round(step_server_kw, 3))
    if site.racks is not None:
        add("racks", "site.racks", site.racks, racks, "racks", 1)
    add("rack_power", "site.rack_power_kw", site.rack_power_kw, max_rack_kw, "kw", round(site.rack_power_kw * 0.1, 3))
    add("rack_units", "site.rack_units", site.rack_units, max_rack_units, "u", 1)
    for row in training:
        add(
            f"job:{row.name}:deadline",
            f"training.{row.name}.deadline_days",
            row.deadline_days,
            row.end_day,
            "days",
            round(row.deadline_days * 0.1, 3),
        )
    for svc in problem.inference:
        years = [r for r in inference if r.name == svc.name]
        # the tightest year speaks for the service: least capacity to spare
        row = min(years, key=lambda r: (r.capacity_rps - r.required_rps, r.year or 0))
        add(
            f"service:{row.name}:rate",
            f"inference.{row.name}.requests_per_s",
            row.required_rps,
            row.capacity_rps,
            "rps",
            -round(row.required_rps * 0.1, 6),
            at_least=True,
        )
        ttft = max((r.ttft_ms for y in years for r in y.replicas), default=0.0)
        tpot = max((r.tpot_ms for y in years for r in y.replicas), default=0.0)
        if svc.mix is not None:  # each bucket's latency on the kind serving it
            ttft = max((s.ttft_ms for y in years for b in y.routing for s in b.routes), default=0.0)
            tpot = max((s.tpot_ms for y in years for b in y.routing for s in b.routes), default=0.0)
        add(
            f"service:{row.name}:ttft",
            f"inference.{row.name}.ttft_ms",
            svc.ttft_ms,
            ttft,
            "ms",
            round(svc.ttft_ms * 0.1, 3),
        )
        add(
            f"service:{row.name}:tpot",
            f"inference.{row.name}.tpot_ms",
            svc.tpot_ms,
            tpot,
            "ms",
            round(svc.tpot_ms * 0.1, 3),
        )
    for gpu, units in problem.catalog.stock.items():
        # per purchase year: the year that bought most
        per_year = [v for (k, _), v in (gpus_by_year or {}).items() if k.lower() == gpu.lower()]
        used = max(per_year, default=next((v for k, v in gpus_bought.items() if k.lower() == gpu.lower()), 0))
        add(f"stock:{gpu}", f"catalog.stock.{gpu}", units, used, "gpus", 8)
    if problem.policy.max_gpu_types is not None:
        add(
            "policy:max_gpu_types",
            "policy.max_gpu_types",
            problem.policy.max_gpu_types,
            sum(1 for v in gpus_bought.values() if v),
            "types",
            1,
        )
    return rows
