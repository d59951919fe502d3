"""Any model from its config.json: `planner catalog import-model` writes a catalog entry,
and a problem may name `model: {config: path}` beside it."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from planner.cli import app
from planner.io.problem_io import load_problem
from planner.pipeline import plan_problem
from planner.schema.catalog import LlmModel

CONFIGS = Path(__file__).resolve().parent / "data" / "configs"
runner = CliRunner()

# Published totals (billions): the model cards' figures.
PUBLISHED = {"qwen3-32b": 32.8, "deepseek-v3": 671.0, "gpt-oss-120b": 116.8}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_import_model_writes_an_entry_with_the_published_size(name: str, tmp_path: Path) -> None:
    out = tmp_path / "models.yaml"
    run = runner.invoke(app, ["catalog", "import-model", str(CONFIGS / f"{name}.json"), "--id", name, "-o", str(out)])
    assert run.exit_code == 0, run.output
    (entry,) = yaml.safe_load(out.read_text())
    model = LlmModel.model_validate(entry)
    assert model.id == name
    assert model.params_b == pytest.approx(PUBLISHED[name], rel=0.01)
    assert model.active_params_b <= model.params_b


def test_an_unknown_architecture_names_the_field(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"architectures": ["FooForCausalLM"], "hidden_size": 8}))
    run = runner.invoke(app, ["catalog", "import-model", str(config)])
    assert run.exit_code == 2
    assert "architectures" in run.output and "Traceback" not in run.output


SERVE = """
name: from-config
catalog:
  exclude: [{exclude}]
inference:
  - name: chat
    model: {{config: {config}}}
    precisions: [fp8]
    requests_per_s: 5
    ttft_ms: 2000
    tpot_ms: 60
"""


def test_a_problem_may_name_a_models_config(tmp_path: Path, catalog) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "qwen3-32b").mkdir()
    shutil.copy(CONFIGS / "qwen3-32b.json", tmp_path / "qwen3-32b" / "config.json")
    exclude = ", ".join(g for g in catalog.gpus if g not in ("H100-SXM", "H200-SXM"))
    problem = tmp_path / "p.yaml"
    problem.write_text(textwrap.dedent(SERVE.format(exclude=exclude, config="qwen3-32b/config.json")))
    plan = plan_problem(load_problem(problem))
    assert plan.status == "optimal" and plan.verification == []
    assert plan.inference[0].model == "qwen3-32b"
    catalog_plan = plan_problem(load_problem(_with_catalog_model(problem, tmp_path)))
    assert catalog_plan.tco_usd == pytest.approx(plan.tco_usd)  # the same shape as the catalog's entry


def _with_catalog_model(problem: Path, tmp_path: Path) -> Path:
    other = tmp_path / "q.yaml"
    other.write_text(problem.read_text().replace("{config: qwen3-32b/config.json}", "qwen3-32b"))
    return other


def test_a_models_config_outside_the_problems_folder_is_refused(tmp_path: Path) -> None:
    problem = tmp_path / "p.yaml"
    problem.write_text(textwrap.dedent(SERVE.format(exclude="T4", config=str(CONFIGS / "qwen3-32b.json"))))
    run = runner.invoke(app, ["solve", str(problem)])
    assert run.exit_code == 2
    assert "inference.chat.model.config" in run.output and "Traceback" not in run.output


NEW_MODELS = [
    "deepseek-v3",
    "deepseek-r1",
    "qwen3-8b",
    "qwen3-14b",
    "qwen3-32b",
    "qwen3-30b-a3b",
    "qwen3-235b-a22b",
    "gpt-oss-20b",
    "gpt-oss-120b",
    "llama-4-scout",
    "llama-4-maverick",
    "kimi-k2",
]


@pytest.mark.parametrize("model", NEW_MODELS)
def test_a_service_of_each_2026_model_is_planned(model: str) -> None:
    from planner.io.problem_io import loads_problem

    text = f"""
    name: {model}-service
    inference:
      - name: chat
        model: {model}
        requests_per_s: 2
        ttft_ms: 3000
        tpot_ms: 100
    """
    plan = plan_problem(loads_problem(textwrap.dedent(text), "m.yaml"))
    assert plan.status == "optimal" and plan.verification == []
    assert plan.inference[0].model == model and plan.inference[0].capacity_rps >= 2


@pytest.mark.parametrize("gpu", ["H100-SXM", "B200", "B300", "MI300X", "MI355X"])
def test_estimates_answer_for_every_2026_model_on_each_gpu(gpu: str) -> None:
    """`planner estimate inference|training` answer (a figure, or why it does not fit) for
    every new model on the GPUs a 2026 buyer compares."""
    for model in NEW_MODELS:
        inf = runner.invoke(
            app,
            ["estimate", "inference", "--model", model, "--gpu", gpu, "--gpus", "8", "--precision", "fp8", "--json"],
        )
        assert inf.exit_code == 0, (model, gpu, inf.output)
        got = json.loads(inf.output)
        assert got["fits"] is True or got["reason"], (model, gpu, got)
        train = runner.invoke(
            app,
            ["estimate", "training", "--model", model, "--gpu", gpu, "--gpus", "64", "--tokens", "1e12", "--json"],
        )
        assert train.exit_code == 0, (model, gpu, train.output)
        got = json.loads(train.output)
        assert (got["fits"] and got["days"] > 0) or got["reason"], (model, gpu, got)
