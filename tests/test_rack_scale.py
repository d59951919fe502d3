"""Rack-scale systems (GB200/GB300 NVL72): jobs and replicas on 4-GPU compute trays inside a
72-GPU NVLink domain and, for jobs, across racks over the scale-out fabric; racks bought
whole; MoE serving with wide expert parallelism and attention data parallelism."""

from __future__ import annotations

import random
import textwrap

import pytest
from typer.testing import CliRunner

from planner.catalog import Catalog
from planner.cli import app
from planner.errors import InputError
from planner.io.problem_io import loads_problem
from planner.options.inference import WIDE_EP_IN_PLANS, inference_options, replica_layouts
from planner.options.pools import RELAXABLE_BOUNDS, pool_limit
from planner.options.training import job_sizes
from planner.perf.estimate import run_inference_estimate, run_training_estimate
from planner.perf.links import packing_sizes
from planner.perf.shapes import shape_of
from planner.pipeline import plan_problem
from planner.schema.plan import Plan

RACK_KW = (120_000.0, 125_000.0)  # GB200 NVL72: ~120 kW (NVIDIA)


def _train(gpus: int) -> dict[str, object]:
    return run_training_estimate(
        gpu="GB200",
        tokens=1e12,
        model="llama-3.1-70b",
        params_b=None,
        gpus=gpus,
        precision="bf16",
        method="full",
        fabric=None,
        seq_len=4096,
        server=None,
    )


# --- sizing in compute trays -------------------------------------------------------------


def test_a_256_gpu_gb200_job_runs_on_64_trays_of_4_racks_and_beats_128() -> None:
    big, half = _train(256), _train(128)
    assert big["fits"] and half["fits"]
    assert big["server"] == "gb200-nvl72" and big["fabric"] == "ib-ndr"
    # 64 trays: three whole racks and 10 of a fourth, whose other 8 trays stay free
    assert (big["servers"], big["trays"], big["free_trays"]) == (4, 64, 8)
    assert 0 < big["days"] < half["days"]  # type: ignore[operator]
    assert big["days"] == pytest.approx(half["days"] * 128 / 256, rel=0.05)  # type: ignore[operator]


@pytest.mark.parametrize("gpus", [72, 144, 256])
def test_estimate_training_on_gb200_exits_0(gpus: int) -> None:
    args = ["estimate", "training", "--model", "llama-3.1-70b", "--gpu", "GB200", "--tokens", "1e12"]
    run = CliRunner().invoke(app, [*args, "--gpus", str(gpus), "--json"])
    assert run.exit_code == 0, run.output
    assert '"fits": true' in run.output


def test_a_job_off_the_trays_is_refused() -> None:
    with pytest.raises(InputError, match="4-GPU compute trays"):
        _train(250)


def test_gb200_sizes_are_whole_trays(catalog: Catalog) -> None:
    nvl72 = catalog.servers["gb200-nvl72"]
    inside = job_sizes(nvl72, catalog.fabrics["none"], cap=10)
    across = job_sizes(nvl72, catalog.fabrics["ib-ndr"], cap=10)
    assert list(inside) == [1, 2, 4, 8, 24, 72]  # parts of one tray, then whole trays
    assert across[0] == 76 and across[-1] == 720 and all(n % 4 == 0 for n in across)
    assert 256 in across
    # an 8-GPU HGX keeps its sizes: powers of two, then whole servers
    hgx = catalog.servers["hgx-b200-8gpu"]
    assert list(job_sizes(hgx, catalog.fabrics["none"], 4)) == [1, 2, 4, 8]
    assert list(job_sizes(hgx, catalog.fabrics["ib-ndr"], 4)) == [16, 24, 32]


def _packs(sizes: list[int], racks: int, per: int) -> bool:
    """Largest first into the first rack with room: never splits a group across racks."""
    free = [per] * racks
    for n in sorted(sizes, reverse=True):
        i = next((i for i, f in enumerate(free) if f >= n), None)
        if i is None:
            return False
        free[i] -= n
    return True


def test_groups_whose_gpus_fit_the_racks_pack_without_leaving_a_rack() -> None:
    """The optimiser checks only that a pool's GPUs add up: with NVL72's sizes that is enough."""
    chain = packing_sizes(72, 4)
    rng = random.Random(13)
    for _ in range(2000):
        racks = rng.randint(1, 4)
        groups: list[int] = []
        while True:
            n = rng.choice(chain)
            if sum(groups) + n > 72 * racks:
                break
            groups.append(n)
        assert _packs(groups, racks, 72), (groups, racks)
    # why not every tray multiple: three 48-GPU jobs fill two racks' GPUs, but not two racks
    assert not _packs([48, 48, 48], 2, 72)


# --- the rack in a plan -----------------------------------------------------------------

TRAIN_ON_GB200 = """
name: rack-train
site: {{rack_units: 48, rack_power_kw: 130}}
catalog:
  exclude: [{exclude}]
training:
  - name: pretrain
    model: llama-3.1-70b
    tokens: 1.0e12
    deadline_days: 50
"""


def _solve(text: str) -> Plan:
    return plan_problem(loads_problem(textwrap.dedent(text), "rack.yaml"))


def _others(catalog: Catalog, keep: set[str]) -> str:
    return ", ".join(sorted(g for g in catalog.gpus if g not in keep))


def test_a_job_beyond_one_rack_takes_whole_trays_and_buys_whole_racks(catalog: Catalog) -> None:
    plan = _solve(TRAIN_ON_GB200.format(exclude=_others(catalog, {"GB200"})))
    assert plan.status == "optimal" and plan.verification == []
    (job,) = plan.training
    assert job.gpu == "GB200" and job.gpus > 72 and job.gpus % 4 == 0
    (rack,) = [s for s in plan.servers if s.gpu == "GB200"]
    assert rack.count * 72 >= job.gpus
    assert RACK_KW[0] <= rack.unit_power_w <= RACK_KW[1]


DEEPSEEK = """
name: deepseek-rack
horizon_years: 3
site: {{rack_units: 48, rack_power_kw: 130}}
catalog:
  exclude: [{exclude}]
inference:
  - name: reasoning
    model: deepseek-v3
    precisions: [fp8]
    requests_per_s: {rps}
    input_tokens: 2000
    output_tokens: 500
    ttft_ms: 2000
    tpot_ms: 50
"""


def test_deepseek_on_gb200_and_b200_solves_and_verifies(catalog: Catalog) -> None:
    plan = _solve(DEEPSEEK.format(exclude=_others(catalog, {"GB200", "B200"}), rps=40))
    assert plan.status == "optimal" and plan.verification == []
    assert {r.gpu for s in plan.inference for r in s.replicas} <= {"GB200", "B200"}
    assert plan.inference[0].capacity_rps >= 40


def test_a_gb200_nvl72_rack_draws_120_to_125_kw_in_a_plan(catalog: Catalog) -> None:
    plan = _solve(DEEPSEEK.format(exclude=_others(catalog, {"GB200"}), rps=100))
    assert plan.status == "optimal" and plan.verification == []
    (rack,) = [s for s in plan.servers if s.server == "gb200-nvl72"]
    assert RACK_KW[0] <= rack.unit_power_w <= RACK_KW[1]
    for s in plan.inference:
        for r in s.replicas:
            assert r.gpus_per_replica in packing_sizes(72, 4)


# --- MoE at rack scale ------------------------------------------------------------------


# Long outputs at a relaxed TPOT: the batch is bounded by the KV cache, where attention data
# parallelism (MLA's latent held once per group, not once per GPU) buys throughput.
LONG_DECODE = (
    DEEPSEEK.replace("input_tokens: 2000", "input_tokens: 8000")
    .replace("output_tokens: 500", "output_tokens: 8000")
    .replace("ttft_ms: 2000", "ttft_ms: 60000")
    .replace("tpot_ms: 50", "tpot_ms: 300")
)


def _options(catalog: Catalog, model: str, keep: set[str], wide_ep: bool = True):  # type: ignore[no-untyped-def]
    loaded = loads_problem(textwrap.dedent(LONG_DECODE.format(exclude=_others(catalog, keep), rps=40)), "m.yaml")
    p = loaded.problem
    svc = p.inference[0].model_copy(update={"model": model})
    cat = catalog.restricted(p.catalog.exclude, None, {}, {}, allow=p.policy.allow)
    return inference_options(svc, cat, lambda key: pool_limit(p, cat, key, ignore=RELAXABLE_BOUNDS), wide_ep)


def test_an_moe_service_has_attention_dp_options(catalog: Catalog) -> None:
    w = _options(catalog, "deepseek-v3", {"GB200", "B200"})
    wide = [o for o in w.inference if o.attention_dp > 1]
    assert wide, [o.layout for o in w.inference]
    for o in wide:
        assert o.tensor_parallel * o.attention_dp == o.gpus_per_replica
        assert o.estimate.factors["attention_dp"] == o.attention_dp
    assert {o.gpu for o in wide} == {"GB200", "B200"}


def test_wide_ep_layouts_span_the_nvlink_domain_in_trays(catalog: Catalog) -> None:
    nvl72, hgx = catalog.servers["gb200-nvl72"], catalog.servers["hgx-b200-8gpu"]
    ds = shape_of("deepseek-v3", catalog)
    on_rack = replica_layouts(nvl72, catalog.gpus["GB200"], ds)
    assert {n for n, dp in on_rack if dp > 1} == {2, 4, 8, 24, 72}
    assert (72, 18) in on_rack and (24, 6) in on_rack  # EP72 with TP4 attention, EP24 with TP4
    assert max(n for n, _ in replica_layouts(hgx, catalog.gpus["B200"], ds)) == 8
    # dense models and models with fewer experts than GPUs get no wider layouts
    assert all(dp == 1 for _, dp in replica_layouts(nvl72, catalog.gpus["GB200"], shape_of("qwen3-32b", catalog)))
    mixtral = replica_layouts(nvl72, catalog.gpus["GB200"], shape_of("mixtral-8x7b", catalog))
    assert max(n for n, _ in mixtral) == 8


def test_wide_ep_adds_few_options(catalog: Catalog) -> None:
    plain = _options(catalog, "deepseek-v3", {"GB200", "B200"}, wide_ep=False)
    wide = _options(catalog, "deepseek-v3", {"GB200", "B200"})
    assert all(o.attention_dp == 1 for o in plain.inference)
    assert len(wide.inference) <= len(plain.inference) + 2 * 16  # undominated kinds only


def test_estimate_inference_takes_attention_dp() -> None:
    def est(dp: int) -> dict[str, object]:
        return run_inference_estimate(
            gpu="GB200",
            model="deepseek-v3",
            params_b=None,
            gpus=8,
            precision="fp8",
            input_tokens=2000,
            output_tokens=500,
            concurrency=64,
            tpot_ms=None,
            ttft_ms=None,
            server=None,
            attention_dp=dp,
        )

    plain, wide = est(1), est(2)
    assert plain["fits"] and wide["fits"]
    assert (plain["attention_dp"], wide["attention_dp"]) == (1, 2)
    assert wide["weights_gb"] > plain["weights_gb"]  # each attention group holds its own dense weights
    with pytest.raises(InputError, match="--attention-dp"):
        est(3)


@pytest.mark.skipif(not WIDE_EP_IN_PLANS, reason="plans do not carry attention_dp yet")
def test_a_plan_with_wide_ep_verifies(catalog: Catalog) -> None:
    plan = _solve(LONG_DECODE.format(exclude=_others(catalog, {"GB200", "B200"}), rps=40))
    assert plan.status == "optimal" and plan.verification == []
    assert any(r.attention_dp > 1 for s in plan.inference for r in s.replicas)  # type: ignore[attr-defined]
