"""`catalog import-model`'s core: parameter counts from a config.json against the published ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from planner.errors import InputError
from planner.io.hf_config import model_entry_yaml, model_from_config
from planner.schema.catalog import LlmModel, ModelsFile

CONFIGS = Path(__file__).parent / "data" / "configs"


def _config(name: str) -> dict:
    return json.loads((CONFIGS / name).read_text(encoding="utf-8"))


def test_qwen3_32b_matches_its_model_card():
    model, total_b = model_from_config(CONFIGS / "qwen3-32b.json")
    assert total_b == pytest.approx(32.8, rel=0.01)  # model card: 32.8B
    # the card's non-embedding count, 31.2B: total minus embedding and output head
    assert total_b - 2 * 151_936 * 5120 / 1e9 == pytest.approx(31.2, rel=0.01)
    assert (model.id, model.layers, model.kv_heads, model.head_dim) == ("qwen3-32b", 64, 8, 128)
    assert model.experts == 1 and model.attention == "gqa" and model.sliding_window is None


def test_deepseek_v3_total_excludes_the_mtp_module():
    model, total_b = model_from_config(CONFIGS / "deepseek-v3.json")
    # 671B is the main model; the Hub's 685B adds the multi-token-prediction module
    assert total_b == pytest.approx(671, rel=0.01)
    assert model.mtp_params_b == pytest.approx(11.5, rel=0.01)  # DeepSeek: "11.5B unique parameters"
    # 37B activated; DeepSeek's README_WEIGHTS.md: 36.6B including the 0.9B output head
    assert model.active_params_b == pytest.approx(36.6, rel=0.01)
    assert round(model.active_params_b) == 37
    assert (model.attention, model.kv_lora_rank, model.qk_rope_head_dim) == ("mla", 512, 64)
    assert (model.experts, model.experts_per_token, model.shared_experts, model.moe_layers) == (256, 8, 1, 58)
    assert model.weights_format == "fp8"


def test_gpt_oss_120b_matches_openai():
    model, total_b = model_from_config(CONFIGS / "gpt-oss-120b.json")
    assert total_b == pytest.approx(116.8, rel=0.01)  # model card: 116.83B
    assert model.active_params_b == pytest.approx(5.1, rel=0.01)  # 5.13B
    assert (model.sliding_window, model.full_attention_layers) == (128, 18)
    assert (model.experts, model.experts_per_token, model.experts_format) == (128, 4, "mxfp4")
    assert model.weights_format == "bf16"  # attention, router and embeddings are not MXFP4


def test_other_families_match_their_published_counts():
    # Qwen3-30B-A3B: 30.5B total, 3.3B activated counting the embedding (0.31B)
    qwen, total = model_from_config(CONFIGS / "qwen3-30b-a3b.json")
    assert total == pytest.approx(30.5, rel=0.01)
    assert qwen.active_params_b + 151_936 * 2048 / 1e9 == pytest.approx(3.3, rel=0.02)
    # Llama 4 Maverick: 400B; MoE on every other layer, chunked attention on 3 layers in 4
    maverick, total = model_from_config(CONFIGS / "llama-4-maverick.json")
    assert total == pytest.approx(400, rel=0.01)
    assert (maverick.moe_layers, maverick.shared_experts, maverick.full_attention_layers) == (24, 1, 12)
    # Kimi K2: "1T total, 32B activated" (round figures)
    kimi, total = model_from_config(CONFIGS / "kimi-k2.json")
    assert total == pytest.approx(1000, rel=0.03)
    assert kimi.active_params_b == pytest.approx(32, rel=0.02)
    assert kimi.mtp_params_b is None and kimi.moe_layers == 60


def _llama_31_8b() -> dict:
    return {
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 128256,
        "max_position_embeddings": 131072,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    }


def test_dense_llama_by_hand_and_tied_embeddings():
    _, total_b = model_from_config(_llama_31_8b(), "llama-3.1-8b")
    per_layer = 4096 * 4096 * 2 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096
    by_hand = 32 * per_layer + 2 * 128_256 * 4096 + 4096
    assert total_b * 1e9 == by_hand  # 8.03B, as Meta publishes
    assert total_b == pytest.approx(8.03, rel=0.01)
    tied, tied_b = model_from_config({**_llama_31_8b(), "tie_word_embeddings": True})
    assert tied_b * 1e9 == by_hand - 128_256 * 4096
    assert tied.active_params_b == tied.params_b  # the tied table is the output head too


def test_mixtral_and_mistral_windows():
    mixtral = {
        **_llama_31_8b(),
        "architectures": ["MixtralForCausalLM"],
        "vocab_size": 32000,
        "num_local_experts": 8,
        "num_experts_per_tok": 2,
        "sliding_window": None,
    }
    model, total_b = model_from_config(mixtral)
    assert total_b == pytest.approx(46.7, rel=0.01)  # Mistral: 46.7B total, 12.9B active
    assert model.active_params_b == pytest.approx(12.9 - 32000 * 4096 / 1e9, rel=0.01)
    assert model.sliding_window is None
    mistral = {**_llama_31_8b(), "architectures": ["MistralForCausalLM"], "vocab_size": 32000, "sliding_window": 4096}
    model, _ = model_from_config(mistral)
    assert (model.sliding_window, model.full_attention_layers) == (4096, 0)


def test_unknown_architecture_is_an_input_error_naming_the_field(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"architectures": ["MambaForCausalLM"], "model_type": "mamba"}))
    with pytest.raises(InputError) as err:
        model_from_config(path)
    assert err.value.key == "architectures" and "MambaForCausalLM" in err.value.message
    assert err.value.file == str(path)


def test_missing_field_is_named():
    config = _config("deepseek-v3.json")
    del config["kv_lora_rank"]
    with pytest.raises(InputError) as err:
        model_from_config(config)
    assert err.value.key == "kv_lora_rank" and "kv_lora_rank" in err.value.message


def test_bad_json_and_missing_file(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    with pytest.raises(InputError, match="not valid JSON"):
        model_from_config(bad)
    with pytest.raises(InputError, match="file not found"):
        model_from_config(tmp_path / "nothing.json")


def test_id_defaults_to_the_directory_or_the_file_name(tmp_path):
    folder = tmp_path / "Qwen3-32B"
    folder.mkdir()
    (folder / "config.json").write_text((CONFIGS / "qwen3-32b.json").read_text(encoding="utf-8"))
    assert model_from_config(folder / "config.json")[0].id == "qwen3-32b"
    assert model_from_config(CONFIGS / "gpt-oss-120b.json", "my-oss")[0].id == "my-oss"


@pytest.mark.parametrize("name", ["deepseek-v3.json", "gpt-oss-120b.json", "qwen3-32b.json"])
def test_entry_yaml_round_trips_into_a_models_file(name):
    model, _ = model_from_config(CONFIGS / name)
    text = model_entry_yaml(model)
    assert text.startswith("  - id: ")  # as the bundled models.yaml lists them
    parsed = yaml.safe_load("models:\n" + text)
    assert ModelsFile.model_validate(parsed).models == [model]
    assert LlmModel.model_validate(yaml.safe_load(model_entry_yaml(model, indent=0))[0]) == model
