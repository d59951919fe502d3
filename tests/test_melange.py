"""Mélange configs: the converter (`planner import-melange`), its errors, and the direct model.

The bundled example (melange-release, melange/config/example.json): A10G $1.01/h and A100-80GB
$3.67/h, 30 requests/s over a 2x2 mix, slice factor 1. Mélange answers 3 A10G + 1 A100 =
$6.70/h; the direct CP-SAT model must do at least as well and agree with brute force.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from planner.cli import app
from planner.io.melange import token_sizes
from planner.io.melange_config import MelangeGpu, MelangeInstance, parse_config
from planner.optimize.melange_direct import slice_loads, solve_brute_force, solve_direct

EXAMPLE: dict[str, Any] = {
    "gpu_info": {
        "A10G": {"cost": 1.01, "tputs": [[2, 1], [5, 2]]},
        "A100-80GB": {"cost": 3.67, "tputs": [[20, 20], [40, 20]]},
    },
    "workload_distribution": [[0.2, 0.1], [0.5, 0.2]],
    "total_request_rate": 30,
    "slice_factor": 1,
}


@dataclass
class Run:
    code: int
    output: str


def planner(*args: str | Path) -> Run:
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return Run(result.exit_code, result.output)


def write_config(tmp_path: Path, data: Any, name: str = "example.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def convert(tmp_path: Path, data: Any, *extra: str) -> tuple[Run, Path]:
    out = tmp_path / "problem.yaml"
    return planner("import-melange", write_config(tmp_path, data), "-o", out, *extra), out


def example_with(**changes: Any) -> dict[str, Any]:
    data = json.loads(json.dumps(EXAMPLE))
    data.update(changes)
    return data


# ------------------------------------------------------------------------------------ the converter


def test_example_converts_to_a_rent_only_problem(tmp_path: Path) -> None:
    run, out = convert(tmp_path, EXAMPLE)
    assert run.code == 0, run.output
    problem = yaml.safe_load(out.read_text(encoding="utf-8"))
    assert problem["name"] == "melange-example"
    assert problem["horizon_years"] == 1
    assert problem["finance"] == {"buy": False, "rent": "on_demand", "discount_rate": 0.0}
    assert problem["catalog"] == {"rent_usd_per_gpu_hour": {"A10G": 1.01, "A100-PCIe-80GB": 3.67}}
    (svc,) = problem["inference"]
    assert svc["name"] == "melange" and "model" not in svc
    assert svc["requests_per_s"] == 30
    assert "ttft_ms" not in svc and "tpot_ms" not in svc  # the config has no SLOs
    assert svc["mix"]["slices"] == 1
    shares = {b["name"]: b["share"] for b in svc["mix"]["buckets"]}
    assert shares == {"in0-out0": 0.2, "in0-out1": 0.1, "in1-out0": 0.5, "in1-out1": 0.2}
    sizes = {b["name"]: (b["input_tokens"], b["output_tokens"]) for b in svc["mix"]["buckets"]}
    assert sizes == {"in0-out0": (25, 25), "in0-out1": (25, 100), "in1-out0": (100, 25), "in1-out1": (100, 100)}
    rates = {(m["gpu"], m["bucket"]): m["requests_per_s"] for m in svc["measured"]}
    assert rates == {
        ("A10G", "in0-out0"): 2,
        ("A10G", "in0-out1"): 1,
        ("A10G", "in1-out0"): 5,
        ("A10G", "in1-out1"): 2,
        ("A100-PCIe-80GB", "in0-out0"): 20,
        ("A100-PCIe-80GB", "in0-out1"): 20,
        ("A100-PCIe-80GB", "in1-out0"): 40,
        ("A100-PCIe-80GB", "in1-out1"): 20,
    }
    assert all(set(m) == {"gpu", "bucket", "requests_per_s"} for m in svc["measured"])


def test_zero_cells_and_zero_throughputs_are_left_out(tmp_path: Path) -> None:
    data = example_with(workload_distribution=[[0.3, 0.0], [0.5, 0.2]])
    data["gpu_info"]["A10G"]["tputs"] = [[2, 1], [5, 0]]
    run, out = convert(tmp_path, data)
    assert run.code == 0, run.output
    (svc,) = yaml.safe_load(out.read_text(encoding="utf-8"))["inference"]
    assert [b["name"] for b in svc["mix"]["buckets"]] == ["in0-out0", "in1-out0", "in1-out1"]
    pairs = {(m["gpu"], m["bucket"]) for m in svc["measured"]}
    assert ("A10G", "in1-out1") not in pairs  # A10G cannot serve it
    assert not any(b == "in0-out1" for _, b in pairs)  # no requests there
    assert ("A100-PCIe-80GB", "in1-out1") in pairs


def test_options_sizes_names_and_gpu_map(tmp_path: Path) -> None:
    data = example_with()
    data["gpu_info"]["my-h100"] = data["gpu_info"].pop("A100-80GB")
    run, out = convert(
        tmp_path,
        data,
        "--gpu",
        "my-h100=h100-nvl",
        "--input-sizes",
        "128,2048",
        "--output-sizes",
        "64,512",
        "--name",
        "chat",
    )
    assert run.code == 0, run.output
    problem = yaml.safe_load(out.read_text(encoding="utf-8"))
    assert problem["name"] == "chat"
    assert problem["catalog"]["rent_usd_per_gpu_hour"] == {"A10G": 1.01, "H100-NVL": 3.67}  # catalog spelling
    buckets = problem["inference"][0]["mix"]["buckets"]
    assert [(b["input_tokens"], b["output_tokens"]) for b in buckets] == [
        (128, 64),
        (128, 512),
        (2048, 64),
        (2048, 512),
    ]


def test_readme_forms_overall_rate_and_gpu_list(tmp_path: Path) -> None:
    data = {
        "gpu_info": [{"name": name, **info} for name, info in EXAMPLE["gpu_info"].items()],
        "workload_distribution": EXAMPLE["workload_distribution"],
        "overall_rate": 30,
    }
    run, out = convert(tmp_path, data)
    assert run.code == 0, run.output
    problem = yaml.safe_load(out.read_text(encoding="utf-8"))
    assert problem["inference"][0]["requests_per_s"] == 30
    assert problem["inference"][0]["mix"]["slices"] == 1  # Mélange's default slice factor


def test_max_count_becomes_stock(tmp_path: Path) -> None:
    data = example_with()
    data["gpu_info"]["A10G"]["max_count"] = 2
    run, out = convert(tmp_path, data)
    assert run.code == 0, run.output
    assert yaml.safe_load(out.read_text(encoding="utf-8"))["catalog"]["stock"] == {"A10G": 2}


def test_default_sizes_follow_melange_profiling_then_double() -> None:
    assert token_sizes(2, None, "x") == [25, 100]
    assert token_sizes(8, None, "x") == [25, 100, 250, 500, 1000, 2000, 4000, 8000]


# ---------------------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ('{"gpu_info": {', "is not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"gpu_info": {}, "gpu_info": {}}', "appears twice"),
        (example_with(total_request_rate=float("nan")), "NaN is not a number JSON allows"),
        ({k: v for k, v in EXAMPLE.items() if k != "gpu_info"}, "gpu_info: missing"),
        ({k: v for k, v in EXAMPLE.items() if k != "total_request_rate"}, "total_request_rate: missing"),
        (example_with(slice_factr=4), "slice_factr: unknown key (did you mean 'slice_factor'?)"),
        (example_with(workload_distribution=[[0.2, 0.1], [0.5]]), "workload_distribution[1]: has 1 values"),
        (example_with(workload_distribution=[[0.2, 0.1], [0.5, 0.1]]), "shares sum to 0.9"),
        (
            example_with(workload_distribution=[[0.2, 0.1], [0.5, "0.2"]]),
            "workload_distribution[1][1]: expected a number",
        ),
        (example_with(workload_distribution=[[0.3, -0.1], [0.6, 0.2]]), "values must be >= 0"),
        (example_with(total_request_rate=0), "total_request_rate: must be a rate"),
        (example_with(slice_factor=2.5), "slice_factor: must be a whole number"),
        (
            example_with(gpu_info={"A10G": {"cost": 1.01, "tputs": [[2, 1]]}}),
            "gpu_info.A10G.tputs: is 1x2, expected 2x2",
        ),
        (example_with(gpu_info={"A10G": {"cost": -1, "tputs": [[2, 1], [5, 2]]}}), "gpu_info.A10G.cost: must be"),
        (example_with(gpu_info={"A10G": {"tputs": [[2, 1], [5, 2]]}}), "gpu_info.A10G.cost: missing"),
        (example_with(gpu_info={"A10G": {"cost": 1, "tput": [[2, 1], [5, 2]]}}), "gpu_info.A10G.tput: unknown key"),
        (
            example_with(gpu_info={"A10G": {"cost": 1, "tputs": [[2, 1], [0, 2]]}}),
            "workload_distribution[1][0]: bucket in1-out0 has share 0.5 but no GPU serves it",
        ),
        (
            example_with(gpu_info={"TPU-v5e": {"cost": 1, "tputs": [[2, 1], [5, 2]]}}),
            "gpu_info.TPU-v5e: unknown GPU 'TPU-v5e'",
        ),
    ],
)
def test_bad_configs_exit_2_with_one_clear_line(tmp_path: Path, data: Any, expected: str) -> None:
    if isinstance(data, dict) and data.get("total_request_rate") != data.get("total_request_rate"):
        data = json.dumps(data)  # NaN: json.dumps writes the bare token Mélange's own loader accepts
    run, out = convert(tmp_path, data)
    assert run.code == 2, run.output
    assert expected in " ".join(run.output.split()), run.output
    assert "example.json" in run.output  # the message names the file
    assert "Traceback" not in run.output
    assert not out.exists()


def test_unknown_gpu_lists_the_catalog_and_the_fix(tmp_path: Path) -> None:
    data = example_with(gpu_info={"TPU-v5e": {"cost": 1, "tputs": [[2, 1], [5, 2]]}})
    run, _ = convert(tmp_path, data)
    text = " ".join(run.output.split())
    assert run.code == 2
    assert "H100-SXM" in text and "A100-SXM-80GB" in text  # known ids listed
    assert "--gpu TPU-v5e=ID" in text


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--gpu", "A10G"], "expected NAME=ID"),
        (["--gpu", "A10G=B9000"], "'B9000' is not a catalog GPU id"),
        (["--gpu", "V100=A10"], "'V100' is not a GPU in the config"),
        (["--gpu", "A10G=A100-PCIe-80GB"], "both map to A100-PCIe-80GB"),
        (["--input-sizes", "25"], "--input-sizes: gives 1 sizes, the config has 2 buckets"),
        (["--output-sizes", "100,25"], "--output-sizes: sizes must be increasing"),
        (["--output-sizes", "25,lots"], "--output-sizes: expected whole token counts"),
    ],
)
def test_bad_options_exit_2(tmp_path: Path, extra: list[str], expected: str) -> None:
    run, out = convert(tmp_path, EXAMPLE, *extra)
    assert run.code == 2, run.output
    assert expected in " ".join(run.output.split()), run.output
    assert not out.exists()


def test_missing_config_and_output_folder(tmp_path: Path) -> None:
    run = planner("import-melange", tmp_path / "nope.json", "-o", tmp_path / "p.yaml")
    assert run.code == 2 and "nope.json: file not found" in run.output
    config = write_config(tmp_path, EXAMPLE)
    run = planner("import-melange", config, "-o", tmp_path / "no-such-folder" / "p.yaml")
    assert run.code == 2 and "output folder does not exist" in run.output


def test_output_is_replaced_whole(tmp_path: Path) -> None:
    out = tmp_path / "problem.yaml"
    out.write_text("old", encoding="utf-8")
    run, _ = convert(tmp_path, example_with(total_request_rate=-3))
    assert run.code == 2
    assert out.read_text(encoding="utf-8") == "old"  # a failed import leaves the old file alone
    run, _ = convert(tmp_path, EXAMPLE)
    assert run.code == 0
    assert out.read_text(encoding="utf-8").startswith("# Imported by")
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


# -------------------------------------------------------------------------------- the direct model


def test_example_direct_model_matches_melange() -> None:
    inst = parse_config(EXAMPLE)
    direct = solve_direct(inst)
    assert direct.status == "optimal" and direct.exact
    assert direct.cost_usd_per_hour is not None and direct.cost_usd_per_hour <= 6.70 + 1e-9
    assert direct.cost_usd_per_hour == pytest.approx(6.70)  # 3 x 1.01 + 3.67: nothing cheaper exists
    assert solve_brute_force(inst).cost_usd_per_hour == pytest.approx(direct.cost_usd_per_hour)


def test_loads_are_exact_decimals() -> None:
    loads = slice_loads(parse_config(EXAMPLE))
    assert loads[0, 0, "A10G"] == 3  # 0.2 x 30 / 2, not 3.0000000000000004
    assert loads[1, 0, "A100-80GB"] == pytest.approx(0.375)


def test_direct_model_serves_every_slice_within_capacity() -> None:
    inst = random_instance(random.Random(5), rows=3, cols=3, gpus=3, slice_factor=4)
    sol = solve_direct(inst)
    assert sol.status == "optimal"
    loads = slice_loads(inst)
    for i, j in inst.buckets():
        assert sum(k for (bi, bj, _), k in sol.slices.items() if (bi, bj) == (i, j)) == inst.slice_factor
    for g in inst.gpus:
        used = sum(k * loads[i, j, name] for (i, j, name), k in sol.slices.items() if name == g.name)
        assert used <= sol.counts[g.name]


def random_instance(rng: random.Random, rows: int, cols: int, gpus: int, slice_factor: int) -> MelangeInstance:
    """Small decimals, so loads have small denominators; some GPUs cannot serve some buckets."""
    weights = [[rng.choice([0, 1, 2, 3, 5]) for _ in range(cols)] for _ in range(rows)]
    weights[0][0] += 1
    total = sum(map(sum, weights))
    distribution = tuple(tuple(w / total for w in row) for row in weights)
    types = []
    for k in range(gpus):
        tputs = tuple(
            tuple(0.0 if (k == 0 and rng.random() < 0.3) else round(rng.uniform(0.5, 12), 1) for _ in range(cols))
            for _ in range(rows)
        )
        types.append(MelangeGpu(f"G{k}", round(rng.uniform(0.5, 8), 2), tputs))
    return MelangeInstance(tuple(types), distribution, float(rng.randrange(2, 25)), slice_factor)


@pytest.mark.parametrize("seed", range(8))
def test_direct_model_equals_brute_force(seed: int) -> None:
    rng = random.Random(seed)
    inst = random_instance(
        rng, rows=2, cols=rng.choice([1, 2]), gpus=rng.choice([2, 3]), slice_factor=rng.choice([1, 2, 3])
    )
    brute = solve_brute_force(inst)
    direct = solve_direct(inst)
    assert direct.status == brute.status == "optimal"
    assert direct.cost_usd_per_hour == pytest.approx(brute.cost_usd_per_hour, abs=1e-9)


def test_max_count_is_respected_and_can_make_it_infeasible() -> None:
    inst = parse_config(EXAMPLE)
    capped = MelangeInstance(
        (MelangeGpu("A10G", 1.01, inst.gpus[0].tputs, max_count=0), inst.gpus[1]), inst.distribution, 30, 1
    )
    assert solve_direct(capped).cost_usd_per_hour == pytest.approx(2 * 3.67)  # A100s only
    assert solve_brute_force(capped).cost_usd_per_hour == pytest.approx(2 * 3.67)
    none = MelangeInstance(
        tuple(MelangeGpu(g.name, g.cost_usd_per_hour, g.tputs, 0) for g in inst.gpus), inst.distribution, 30, 1
    )
    assert solve_direct(none).status == solve_brute_force(none).status == "infeasible"


def test_rounded_loads_never_under_provision() -> None:
    # Three buckets of exactly 1/3 GPU each: one GPU exactly. Rounded up to 1e-6 GPU (the path
    # taken when exact denominators grow too large) they need a second one: the documented cost.
    inst = MelangeInstance((MelangeGpu("G", 1.0, ((3, 3, 6),)),), ((0.25, 0.25, 0.5),), 4, 1)
    exact = solve_direct(inst)
    rounded = solve_direct(inst, exact_limit=1)
    assert exact.exact and exact.counts == {"G": 1}
    assert solve_brute_force(inst).counts == {"G": 1}
    assert not rounded.exact and rounded.counts == {"G": 2}


# ------------------------------------------------------------------------------------ end to end


def test_planner_solves_melanges_example_at_most_as_dear_as_melange(tmp_path: Path) -> None:
    """Mélange answers 3 A10G + 1 A100-80GB = $6.70/h; the planner's mix must cost no more."""
    run, out = convert(tmp_path, EXAMPLE)
    assert run.code == 0, run.output
    plan_path = tmp_path / "plan.json"
    solved = planner("solve", out, "-q", "--json", plan_path)
    assert solved.code == 0, solved.output
    plan = json.loads(plan_path.read_text(encoding="utf-8"))
    assert plan["status"] == "optimal" and plan["verification"] == []
    assert plan["rent_usd_per_hour"] <= 6.70 + 1e-9
    (service,) = plan["inference"]
    hourly = sum(r["count"] * r["gpus_per_replica"] * r["rent_usd_per_gpu_hour"] for r in service["replicas"])
    assert hourly == pytest.approx(plan["rent_usd_per_hour"])
    # with one slice per bucket, every bucket goes whole to one GPU type
    for bucket in service["routing"]:
        assert [r["share"] for r in bucket["routes"]] == [1.0]
    # the planner's answer equals the direct model's optimum (an independent formulation)
    direct = solve_direct(parse_config(EXAMPLE))
    assert plan["rent_usd_per_hour"] == pytest.approx(direct.cost_usd_per_hour)
