"""The public Python API, for notebooks and scripts: the CLI's pipeline as four functions.

    from planner.api import explain, load_problem, solve, tables

    problem = load_problem("problems/startup.yaml")   # a path, YAML text or a dict
    plan = solve(problem)                             # a ``Plan``: what to buy, what runs where
    plan = explain(problem, plan)                     # what each limit is worth (re-solves)
    frames = tables(plan)                             # pandas DataFrames, one per table of the plan

Errors in the input raise ``InputError`` (a ``PlannerError``), with the file, key and line,
exactly as the CLI reports them.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel

from planner.catalog import load_catalog
from planner.context import prepare
from planner.errors import PlannerError
from planner.explain import explain as explain_context
from planner.io.catalog_refs import check_references
from planner.io.problem_io import LoadedProblem, loads_problem, parse_problem
from planner.io.problem_io import load_problem as load_problem_file
from planner.pipeline import plan_context
from planner.schema.plan import CashFlowRow, ConstraintRow, Plan, PurchaseRow, ReplicaRow, ServerRow, TrainingRow

__all__ = ["LoadedProblem", "Plan", "ProblemSource", "explain", "load_problem", "solve", "tables"]

ProblemSource = LoadedProblem | str | os.PathLike[str] | Mapping[str, Any]
"""A problem as ``load_problem`` takes it: loaded already, a file path, YAML text, or a mapping."""


def load_problem(source: ProblemSource) -> LoadedProblem:
    """Read and validate a problem, and check the GPU and model names it uses against the catalog.

    ``source`` is a path (``str`` or ``Path``) to a problem file, YAML text (a ``str`` with a
    line break in it), or a mapping shaped like a problem file (copied, so later changes to it
    do not reach the problem). A ``LoadedProblem`` is returned as it is.
    Raises ``InputError`` for a file that cannot be read, bad YAML, a schema error or an unknown name.
    """
    if isinstance(source, LoadedProblem):
        return source
    if isinstance(source, Mapping):
        loaded = parse_problem(copy.deepcopy(dict(source)), {}, "<dict>")
    elif isinstance(source, str) and "\n" in source:
        loaded = loads_problem(source, "<yaml text>")
    else:
        loaded = load_problem_file(Path(source))
    check_references(loaded, load_catalog())
    return loaded


def solve(problem: ProblemSource, time_limit_s: float | None = None) -> Plan:
    """The lowest-TCO plan for a problem, checked by the verifier (``plan.verification``).

    ``time_limit_s`` caps the solver, in CP-SAT's deterministic seconds (None: the CLI's default,
    60). An infeasible problem is not an error: the plan has ``status == "infeasible"`` and says
    why in ``plan.diagnosis``.
    """
    return plan_context(prepare(load_problem(problem)), time_limit_s)


def explain(
    problem: ProblemSource, plan: Plan, why_not: list[str] | None = None, time_limit_s: float | None = None
) -> Plan:
    """A copy of ``plan`` with its explanations: each limit's marginal value in
    ``constraints[].marginal_usd``, and budget steps, a runner-up plan and, for the GPUs named in
    ``why_not``, why they were not bought, in ``explanations``.

    Every figure is measured by solving the problem again with one thing changed, so this takes
    several solves; ``time_limit_s`` caps each of them (deterministic seconds). ``plan`` must be
    ``solve(problem)``'s result.
    """
    if plan.status == "infeasible":
        raise PlannerError("an infeasible plan has nothing to explain: see plan.diagnosis for what to relax")
    explained = plan.model_copy(deep=True)
    explain_context(prepare(load_problem(problem)), explained, time_limit_s, why_not)
    return explained


def tables(plan: Plan) -> dict[str, pd.DataFrame]:
    """The plan's tables as pandas DataFrames, read from the plan object and nothing else.

    - ``purchase``: the bill of materials (``extended_price_usd`` sums to ``plan.capex_usd``);
    - ``servers``: server pools by GPU, fabric and year bought;
    - ``training``: one row per job (GPU, size, start and end day, cost);
    - ``inference``: one row per replica kind of each service (``service``, ``model``, ``year``
      and ``required_rps`` first, then the replica's fields);
    - ``constraints``: the named limits (``name``, ``used``, ``limit``, ``slack``, ``unit``, ...);
    - ``cash_flows``: capex, opex and present value per year.

    Columns are the plan's field names, units in the names; an empty table keeps its columns.
    """
    inference = [
        {"service": s.name, "model": s.model, "year": s.year, "required_rps": s.required_rps, **r.model_dump()}
        for s in plan.inference
        for r in s.replicas
    ]
    return {
        "purchase": _frame(plan.purchase, PurchaseRow),
        "servers": _frame(plan.servers, ServerRow),
        "training": _frame(plan.training, TrainingRow),
        "inference": pd.DataFrame(
            inference, columns=["service", "model", "year", "required_rps", *ReplicaRow.model_fields]
        ),
        "constraints": _frame(plan.constraints, ConstraintRow),
        "cash_flows": _frame(plan.cash_flows, CashFlowRow),
    }


def _frame(rows: Sequence[BaseModel], model: type[BaseModel]) -> pd.DataFrame:
    return pd.DataFrame([r.model_dump() for r in rows], columns=list(model.model_fields))
