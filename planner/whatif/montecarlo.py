"""Scenario files: named what-ifs on a base problem, and Monte Carlo draws that test
each candidate plan's hardware against uncertain prices and demand.

    scenarios:
      - name: cheap-power
        set: {finance.electricity_usd_per_kwh: 0.06}
    monte_carlo:
      samples: 50
      seed: 7
      draws:
        finance.electricity_usd_per_kwh: {normal: [0.12, 0.03], min: 0.02}
        inference.chat.requests_per_s: {uniform: [15, 30]}

Each candidate (the base plan and every scenario's plan) keeps the servers it
bought; for every draw the planner re-solves with that hardware fixed (renting
stays possible where the problem allows it), so a candidate's TCO reflects the
drawn prices and whether its hardware still meets the drawn demand.
"""

from __future__ import annotations

import random
import statistics
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from planner.errors import InputError
from planner.io.overrides import check_override_references, variant
from planner.io.problem_io import LoadedProblem, dotted
from planner.io.yaml_io import line_of, load_yaml


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class Distribution(_Strict):
    normal: list[float] | None = Field(default=None, min_length=2, max_length=2, description="[mean, sd]")
    uniform: list[float] | None = Field(default=None, min_length=2, max_length=2, description="[low, high]")
    triangular: list[float] | None = Field(default=None, min_length=3, max_length=3, description="[low, mode, high]")
    min: float | None = None
    max: float | None = None

    @model_validator(mode="after")
    def _one(self) -> Distribution:
        given = [k for k in ("normal", "uniform", "triangular") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(
                "give exactly one of normal: [mean, sd], uniform: [low, high], triangular: [low, mode, high]"
            )
        return self

    def draw(self, rng: random.Random) -> float:
        if self.normal is not None:
            value = rng.gauss(self.normal[0], self.normal[1])
        elif self.uniform is not None:
            value = rng.uniform(*self.uniform)
        else:
            assert self.triangular is not None  # _one: exactly one distribution is given
            low, mode, high = self.triangular
            value = rng.triangular(low, high, mode)
        if self.min is not None:
            value = max(self.min, value)
        if self.max is not None:
            value = min(self.max, value)
        return value


class Scenario(_Strict):
    name: str = Field(min_length=1, max_length=80)
    set: dict[str, Any] = Field(min_length=1, description="dotted path -> value")
    probability: float | None = Field(
        default=None, gt=0, le=1, description="its share (solve --scenarios); none given: equal shares"
    )


class MonteCarlo(_Strict):
    samples: int = Field(default=50, ge=1, le=10_000)
    seed: int = 0
    draws: dict[str, Distribution] = Field(min_length=1)


class ScenarioFile(_Strict):
    scenarios: list[Scenario] = Field(default_factory=list)
    monte_carlo: MonteCarlo | None = None


def load_scenarios(path: str) -> ScenarioFile:
    """Read a scenario file (a regular file, bounded, UTF-8: see planner.io.files) and check it.
    Its overrides are part of the problem: a file one names must stay in the problem's folder."""
    data, lines = load_yaml(Path(path))
    try:
        spec = ScenarioFile.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(err["loc"])
        raise InputError(
            str(err["msg"]).removeprefix("Value error, "),
            file=path,
            key=dotted(loc, data) or None,
            line=line_of(lines, loc),
        ) from None
    for index, scenario in enumerate(spec.scenarios):
        for key, value in scenario.set.items():
            try:
                check_override_references(key, value, path)
            except InputError as exc:
                loc = ("scenarios", index, "set", key)
                where = f"{dotted(loc[:-1], data)}.{exc.key}"
                raise InputError(exc.message, file=path, key=where, line=line_of(lines, loc), hint=exc.hint) from None
    return spec


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    cuts = statistics.quantiles(ordered, n=100, method="inclusive")
    return cuts[int(q) - 1]


def fixed_hardware_tco(
    base: LoadedProblem,
    overrides: dict[str, Any],
    servers: dict[tuple[str, str, str], int],
    time_limit_s: float | None = None,
) -> float | None:
    """TCO of the problem under ``overrides`` with exactly these servers bought (None: infeasible);
    servers on a pool none of its options use still stand and cost (``whatif.fixed.fixed_plan``)."""
    from planner.context import prepare
    from planner.whatif.fixed import fixed_plan

    plan = fixed_plan(prepare(variant(base, overrides) if overrides else base), servers, time_limit_s)
    return None if plan is None else plan.tco_usd


def _evaluate(job: tuple[LoadedProblem, dict[str, Any], dict[tuple[str, str, str], int], float | None]) -> float | None:
    return fixed_hardware_tco(*job)


def run_scenarios(
    base: LoadedProblem,
    spec: ScenarioFile,
    time_limit_s: float | None = None,
    workers: int = 1,
    progress: Any = None,
    executor: str = "local",
    address: str | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Rows per scenario, and (with monte_carlo) TCO percentiles per candidate plan."""
    from planner.errors import PlannerError
    from planner.pipeline import plan_problem
    from planner.whatif.scenarios import plan_summary

    rows: list[dict[str, Any]] = []
    candidates: dict[str, dict[tuple[str, str, str], int]] = {}
    named: list[tuple[str, dict[str, Any]]] = [("base", {})] + [(sc.name, dict(sc.set)) for sc in spec.scenarios]
    for name, overrides in named:
        row: dict[str, Any] = {"scenario": name}
        try:
            plan = plan_problem(variant(base, overrides) if overrides else base, time_limit_s)
        except InputError as exc:
            rows.append({**row, "status": "error", "reason": f"{exc.key or ''}: {exc.message}".lstrip(": ")})
            continue
        except PlannerError as exc:
            rows.append({**row, "status": "error", "reason": str(exc)})
            continue
        rows.append({**row, **plan_summary(plan)})
        if plan.status != "infeasible":
            candidates[name] = {(r.server, r.gpu, r.fabric): r.count for r in plan.servers}
    mc = spec.monte_carlo
    if mc is None or not candidates:
        return rows, []
    rng = random.Random(mc.seed)
    draws = [{path: round(d.draw(rng), 6) for path, d in mc.draws.items()} for _ in range(mc.samples)]
    jobs = [(base, draw, hw, time_limit_s) for hw in candidates.values() for draw in draws]
    from planner.executors import map_ordered

    results: list[float | None] = map_ordered(_evaluate, jobs, workers, executor, address, progress)
    summary = []
    for i, (name, hw) in enumerate(candidates.items()):
        tcos = results[i * len(draws) : (i + 1) * len(draws)]
        ok = [t for t in tcos if t is not None]
        summary.append(
            {
                "candidate": name,
                "gpus": " + ".join(f"{n * _gpus_per(k)}x {k[1]}" for k, n in hw.items()),
                "samples": len(tcos),
                "fails": len(tcos) - len(ok),
                "tco_p10_usd": round(_percentile(ok, 10), 2) if ok else None,
                "tco_p50_usd": round(_percentile(ok, 50), 2) if ok else None,
                "tco_p90_usd": round(_percentile(ok, 90), 2) if ok else None,
            }
        )
    return rows, summary


def _gpus_per(key: tuple[str, str, str]) -> int:
    from planner.catalog import load_catalog

    return load_catalog().servers[key[0]].gpus_per_server
