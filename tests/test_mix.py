"""Request-size mixes: per-bucket routing across replica kinds, CSV traffic, and the verifier."""

from __future__ import annotations

import json

import pytest

from planner.catalog import load_catalog
from planner.io.problem_io import load_problem, loads_problem
from planner.io.requests_csv import bucket_requests
from planner.report.tables import plan_json
from planner.verify import verify
from tests.conftest import solve_text

KEEP = ["RTX-4090", "B200", "H100-NVL", "MI300X", "L40S"]


def _service(body: str, extra: str = "") -> str:
    exclude = ", ".join(g for g in load_catalog().gpus if g not in KEEP)
    return f"""
name: mix
horizon_years: 3
catalog:
  exclude: [{exclude}]
finance:
  ops_usd_per_gpu_type_year: 0  # routing across types is what these tests are about
policy:
  simplicity_tolerance: 0
{extra}
inference:
  - name: chat
    model: llama-3.1-8b
    precisions: [fp8, int4]
    requests_per_s: 100
    ttft_ms: 1500
    tpot_ms: 60
{body}
"""


MIX = """    mix:
      slices: 20
      buckets:
        - {input_tokens: 256, output_tokens: 128, share: 0.8}
        - {input_tokens: 16000, output_tokens: 1000, share: 0.2}
"""


@pytest.fixture(scope="module")
def routed():
    return solve_text(_service(MIX))


def test_routing_splits_a_mix_cheaper_than_any_single_kind(routed):
    single = solve_text(_service(MIX, "  max_gpu_types: 1"))
    assert routed.status == single.status == "optimal"
    assert routed.verification == [] and single.verification == []
    assert routed.tco_usd < single.tco_usd
    (row,) = routed.inference
    short, long = row.routing
    shares_short = {r.replica: r.share for r in short.routes}
    shares_long = {r.replica: r.share for r in long.routes}
    assert shares_short != shares_long  # the two sizes are not routed alike
    assert len({row.replicas[r.replica].gpu for r in [*short.routes, *long.routes]}) >= 2


def test_every_bucket_is_routed_whole_and_meets_its_targets(routed):
    (row,) = routed.inference
    for bucket in row.routing:
        assert sum(r.share for r in bucket.routes) == pytest.approx(1.0)
        for r in bucket.routes:
            assert (r.share * 20) == pytest.approx(round(r.share * 20))
            assert r.ttft_ms <= 1500 and r.tpot_ms <= 60


def test_routing_is_in_the_json(routed):
    data = json.loads(plan_json(routed))
    route = data["inference"][0]["routing"][0]
    assert {"bucket", "input_tokens", "output_tokens", "share", "rps", "routes"} <= set(route)
    assert {"replica", "gpu", "precision", "share", "ttft_ms", "tpot_ms"} <= set(route["routes"][0])


def test_a_one_bucket_mix_plans_exactly_as_the_mean_size():
    one = "    mix:\n      slices: 1\n      buckets:\n        - {input_tokens: 1000, output_tokens: 200, share: 1.0}\n"
    mean = "    input_tokens: 1000\n    output_tokens: 200\n"
    a, b = solve_text(_service(one)), solve_text(_service(mean))
    assert a.tco_usd == pytest.approx(b.tco_usd, abs=1)
    assert a.gpus == b.gpus


def test_the_mix_is_never_dearer_than_the_mean_size_plans_hardware_serving_it(routed):
    """The mean-size plan's replica kinds, made to carry the real mix, cost at least as much."""
    mean = solve_text(_service("    input_tokens: 3405\n    output_tokens: 302\n"))
    kinds = set(mean.gpus)
    exclude = [g for g in KEEP if g not in kinds]
    pinned = solve_text(
        _service(MIX).replace("exclude: [", f"exclude: [{', '.join(exclude)}, " if exclude else "exclude: [")
    )
    assert pinned.status in ("optimal", "infeasible")
    if pinned.status == "optimal":
        assert routed.tco_usd <= pinned.tco_usd + 1e-6


def test_verifier_rejects_a_bucket_left_unrouted(routed):
    problem = loads_problem(_service(MIX)).problem
    catalog = load_catalog().restricted(problem.catalog.exclude, None, {}, {})
    broken = routed.model_copy(deep=True)
    broken.inference[0].routing[1].routes = broken.inference[0].routing[1].routes[:-1]
    errors = verify(problem, catalog, broken)
    assert any("routed" in e for e in errors), errors


def test_csv_of_requests_is_bucketed(tmp_path):
    rows = ["input_tokens,output_tokens"] + ["100,50"] * 6 + ["120,70"] * 2 + ["9000,800"] * 2
    (tmp_path / "traffic.csv").write_text("\n".join(rows) + "\n")
    problem_file = tmp_path / "p.yaml"
    problem_file.write_text(
        _service("    mix:\n      csv: traffic.csv\n      input_edges: [128, 1024]\n      output_edges: [64, 512]\n")
    )
    svc = load_problem(problem_file).problem.inference[0]
    buckets = {b.label: (b.input_tokens, b.output_tokens, b.share) for b in svc.mix.sized}
    assert buckets == {
        "in1-128_out1-64": (100, 50, pytest.approx(0.6)),
        "in1-128_out65-512": (120, 70, pytest.approx(0.2)),
        "in1025-up_out513-up": (9000, 800, pytest.approx(0.2)),
    }


def test_bucketing_by_hand():
    got = bucket_requests([(10, 10), (30, 10), (500, 300)], [100], [100])
    assert [(b["input_tokens"], b["output_tokens"], b["share"]) for b in got] == [(20, 10, 2 / 3), (500, 300, 1 / 3)]


def test_bad_csv_names_the_row(tmp_path):
    from planner.errors import InputError

    (tmp_path / "t.csv").write_text("input_tokens,output_tokens\n100,50\n100,abc\n")
    problem_file = tmp_path / "p.yaml"
    problem_file.write_text(_service("    mix:\n      csv: t.csv\n"))
    with pytest.raises(InputError) as info:
        load_problem(problem_file)
    assert info.value.line == 3 and "output_tokens" in str(info.value)
