"""The public Python API (planner/api.py), starting from the README's example, run as written."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from planner.api import Plan, explain, load_problem, solve, tables
from planner.errors import InputError, PlannerError
from planner.schema.plan import TrainingRow

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
EXAMPLE = ROOT / "problems" / "serve-70b.yaml"


def readme_example() -> str:
    """The fenced python block under the README's "## Python API" heading."""
    text = README.read_text(encoding="utf-8")
    section = re.search(r"^## Python API\n(.*?)(?=^## )", text, re.S | re.M)
    assert section, "README.md has no '## Python API' section"
    blocks = re.findall(r"^```python\n(.*?)^```", section.group(1), re.S | re.M)
    assert len(blocks) == 1, "the Python API section should hold exactly one python example"
    return str(blocks[0])


@pytest.fixture(scope="module")
def example() -> dict[str, Any]:
    """The README example's variables after running it from the repository root (its paths are relative)."""
    namespace: dict[str, Any] = {"__name__": "readme_example"}
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(ROOT)
        exec(compile(readme_example(), "README.md#python-api", "exec"), namespace)
    return namespace


def test_readme_example_solves_and_explains(example: dict[str, Any]) -> None:
    plan = example["plan"]
    assert isinstance(plan, Plan)
    assert plan.status == "optimal"
    assert plan.verification == []  # the independent re-check found nothing wrong
    assert plan.explanations is not None
    limits = example["limits"]
    assert {"name", "used", "limit"} <= set(limits.columns)
    assert list(limits["name"]) == [c.name for c in plan.constraints]
    assert limits["marginal_usd"].notna().all()  # explain measured every limit
    assert (limits["marginal_usd"] <= 0).all()  # loosening a limit never makes the optimum dearer


def test_purchase_frame_adds_up_to_capex(example: dict[str, Any]) -> None:
    plan, purchase = example["plan"], example["frames"]["purchase"]
    assert len(purchase) == len(plan.purchase) > 0
    assert purchase["extended_price_usd"].sum() == pytest.approx(plan.capex_usd)
    assert (purchase["quantity"] * purchase["unit_price_usd"]).sum() == pytest.approx(plan.capex_usd)


def test_frames_agree_with_the_plan(example: dict[str, Any]) -> None:
    plan, frames = example["plan"], example["frames"]
    assert set(frames) == {"purchase", "servers", "training", "inference", "constraints", "cash_flows"}
    servers = frames["servers"]
    gpus = (servers["count"] * servers["gpus_per_server"]).groupby(servers["gpu"]).sum()
    assert gpus.to_dict() == plan.gpus
    assert frames["cash_flows"]["present_value_usd"].sum() == pytest.approx(plan.tco_usd)
    inference = frames["inference"]
    assert set(inference["service"]) == {s.name for s in plan.inference}
    assert len(inference) == sum(len(s.replicas) for s in plan.inference)
    replica_gpus = (inference["count"] * inference["gpus_per_replica"]).groupby(inference["gpu"]).sum()
    assert all(replica_gpus[g] <= plan.gpus[g] for g in replica_gpus.index)
    # a serving-only problem: no jobs, but the table keeps its columns
    assert frames["training"].empty
    assert list(frames["training"].columns) == list(TrainingRow.model_fields)


def test_tables_need_only_the_plan(example: dict[str, Any]) -> None:
    plan = example["plan"]
    again = tables(Plan.model_validate_json(plan.model_dump_json()))
    for name, frame in tables(plan).items():
        pd.testing.assert_frame_equal(again[name], frame, check_dtype=False)


def test_path_text_and_dict_load_the_same_problem() -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    from_path = load_problem(EXAMPLE)
    assert load_problem(str(EXAMPLE)).problem == from_path.problem
    assert load_problem(text).problem == from_path.problem
    data = yaml.safe_load(text)
    from_dict = load_problem(data)
    assert from_dict.problem == from_path.problem
    data["name"] = "changed"  # the loaded problem holds its own copy
    assert from_dict.problem.name == "serve-70b"
    assert load_problem(from_path) is from_path


def test_input_errors_are_the_projects_own() -> None:
    with pytest.raises(InputError, match=r"no-such-problem\.yaml"):
        load_problem("no-such-problem.yaml")
    with pytest.raises(InputError) as bad_key:
        load_problem({"name": "x", "inference": [{"name": "chat", "model": "llama-3.1-8b", "requests_per_s": "x"}]})
    assert bad_key.value.key == "inference.chat.requests_per_s"
    with pytest.raises(InputError, match="unknown GPU") as unknown:
        load_problem(
            "name: x\n"
            "catalog: {exclude: [H100-SMX]}\n"
            "inference: [{name: chat, model: llama-3.1-8b, requests_per_s: 5}]\n"
        )
    assert "H100-SXM" in (unknown.value.hint or "")
    with pytest.raises(InputError):
        solve("no-such-problem.yaml")


def test_explain_returns_a_copy_and_refuses_an_infeasible_plan() -> None:
    problem = load_problem(ROOT / "problems" / "qlora-workstation.yaml")
    plan = solve(problem)
    explained = explain(problem, plan)
    assert plan.explanations is None and all(c.marginal_usd is None for c in plan.constraints)
    assert explained.explanations is not None
    assert all(c.marginal_usd is not None for c in explained.constraints)
    infeasible = Plan(problem=plan.problem, status="infeasible", gap=None)
    with pytest.raises(PlannerError, match="infeasible"):
        explain(problem, infeasible)
