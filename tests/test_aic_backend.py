"""planner/perf/aic_backend.py: the optional aiconfigurator source, in the base install (without it)."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

from planner.catalog import load_catalog
from planner.perf import aic_backend
from planner.perf.inference import estimate_inference
from planner.perf.inference_types import InferenceQuery
from planner.perf.links import link_for
from planner.perf.shapes import shape_of

ROOT = Path(__file__).resolve().parents[1]


def _query(model: str = "gpt-oss-120b", gpu_id: str = "B200", precision: str = "fp4", gpus: int = 1) -> InferenceQuery:
    catalog = load_catalog()
    gpu = catalog.gpus[gpu_id]
    chassis = next(s for s in catalog.servers.values() if gpu.id in s.gpus and s.gpus_per_server >= gpus)
    return InferenceQuery(
        model=shape_of(model, catalog),
        gpu=gpu,
        gpus=gpus,
        precision=precision,
        input_tokens=1024,
        output_tokens=1024,
        link=link_for(chassis, gpu, gpus),
        clients=16,
    )


def test_not_available_in_the_base_install() -> None:
    assert importlib.util.find_spec("aiconfigurator") is None  # CI's base install has no aiconfigurator
    assert aic_backend.available() is False
    assert aic_backend.model_path("llama-3.1-70b") is None  # nothing to give it


def test_estimate_falls_back_to_the_analytic_model_with_source_model() -> None:
    eff = load_catalog().efficiency
    query = _query()
    assert aic_backend.preferred_for(query)  # a preferred pair: only the missing package stops it
    gen = eff.generations[query.gpu.generation]
    assert aic_backend.aic_estimate(query, gen, eff.serving) is None
    found = aic_backend.estimate(query, gen, eff.serving)
    analytic = estimate_inference(query, gen, eff.serving)
    assert found.factors["source"] == "model"
    assert found.fits and found.ttft_ms == analytic.ttft_ms and found.tpot_ms == analytic.tpot_ms
    assert {k: v for k, v in found.factors.items() if k != "source"} == analytic.factors


def test_preferred_only_where_measured_better_on_both() -> None:
    assert aic_backend.PREFERRED  # the benchmark found at least one pair
    for pair in aic_backend.PREFERRED:
        ttft_model, ttft_aic, tpot_model, tpot_aic, rows = aic_backend.MEASURED[pair]
        assert ttft_aic < ttft_model and tpot_aic < tpot_model and rows > 0
    assert not aic_backend.preferred_for(_query("llama-3.1-70b", "H100-SXM", "fp8", 2))
    catalog = load_catalog()
    for model, gpu in aic_backend.MEASURED:
        assert model in catalog.models and gpu in aic_backend.SYSTEMS


def test_the_alias_table_maps_catalog_ids_to_configs_aiconfigurator_bundles() -> None:
    catalog = load_catalog()
    tables = (aic_backend.BUNDLED, aic_backend.COPIED, aic_backend.GENERATED)
    claimed = [model for table in tables for model in table]
    assert len(claimed) == len(set(claimed))  # one source per model
    assert all(model in catalog.models for model in claimed)
    assert all(gpu in catalog.gpus for gpu in aic_backend.SYSTEMS)
    # the Hugging Face ids aiconfigurator 0.12.0 ships configs for (model_configs/<org>--<name>_config.json)
    assert aic_backend.BUNDLED["llama-3.1-70b"] == "meta-llama/Meta-Llama-3.1-70B"
    assert aic_backend.BUNDLED["deepseek-r1"] == "deepseek-ai/DeepSeek-R1"
    assert aic_backend.BUNDLED["gpt-oss-120b"] == "openai/gpt-oss-120b"
    for model, hf_id in aic_backend.BUNDLED.items():
        assert re.fullmatch(r"[\w.-]+/[\w.-]+", hf_id), model
        size = re.search(r"(\d+)[bB]\b", model)
        assert size is None or size.group(1) in hf_id, (model, hf_id)  # the size it claims
    assert all(name.endswith("_config.json") for name in aic_backend.COPIED.values())


def test_generated_configs_follow_the_catalog_shape() -> None:
    """The MLP width derived from the parameter count matches the published configs."""
    catalog = load_catalog()
    published = {"llama-2-7b": 11008, "llama-2-13b": 13824, "llama-2-70b": 28672, "mistral-7b": 14336}
    published |= {"qwen2.5-7b": 18944, "qwen2.5-72b": 29568, "qwen3-14b": 17408}
    assert set(published) == set(aic_backend.GENERATED)
    for model, intermediate in published.items():
        m = catalog.model(model)
        config = aic_backend.dense_config(m, aic_backend.GENERATED[model])
        assert config["intermediate_size"] == intermediate, model
        assert config["num_key_value_heads"] == m.kv_heads and config["num_hidden_layers"] == m.layers
        json.dumps(config)  # written as config.json


def test_quant_modes_follow_the_planner_precision() -> None:
    fp4 = aic_backend.quant_modes(_query("gpt-oss-120b", "B200", "fp4"))
    assert fp4 == {"gemm_quant_mode": "nvfp4", "moe_quant_mode": "w4a8_mxfp4_mxfp8", "kvcache_quant_mode": "fp8"}
    hopper = aic_backend.quant_modes(_query("gpt-oss-120b", "H100-SXM", "bf16"))
    assert hopper is not None and hopper["moe_quant_mode"] == "w4a16_mxfp4"
    deepseek = aic_backend.quant_modes(_query("deepseek-r1", "H200-SXM", "fp8", 8))
    assert deepseek is not None and deepseek["moe_quant_mode"] == "fp8_block"
    assert aic_backend.quant_modes(_query("llama-3.1-70b", "H100-SXM", "fp4", 2)) is None  # no FP4 on Hopper


def test_pyproject_extra_and_not_in_test() -> None:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'^aiconfigurator = \["aiconfigurator==0\.12\.0", "aiconfigurator-core==0\.12\.0"\]$', text, re.M)
    test_extra = text[text.index("test = [") : text.index("]", text.index("test = ["))]
    assert "aiconfigurator" not in test_extra
    assert aic_backend.AIC_VERSION == "0.12.0"
