"""The verifier's checks can fail (issue 11): every violation it can report is produced here by
a real solved plan, which verifies clean, broken in one way."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from planner.catalog import Catalog, load_catalog
from planner.context import prepare
from planner.io.problem_io import LoadedProblem, load_problem, loads_problem
from planner.pipeline import plan_context
from planner.schema.plan import ConstraintRow, Plan, PurchaseRow, RouteShare, TrainingRow
from planner.schema.problem import Problem
from planner.verify import verify

PROBLEMS = Path(__file__).resolve().parent.parent / "problems"
ALL_GPUS = list(load_catalog().gpus)


def _exclude(*keep: str) -> str:
    return ", ".join(g for g in ALL_GPUS if g not in keep)


@dataclass
class Solved:
    """A problem, the restricted catalog the pipeline verifies against, and its plan."""

    problem: Problem
    catalog: Catalog
    plan: Plan

    def broken(self) -> Plan:
        """A copy of the plan to break (the plan itself verifies clean)."""
        assert verify(self.problem, self.catalog, self.plan) == []
        return self.plan.model_copy(deep=True)

    def verify(self, plan: Plan) -> list[str]:
        return verify(self.problem, self.catalog, plan)


def _solve(loaded: LoadedProblem) -> Solved:
    ctx = prepare(loaded)
    plan = plan_context(ctx)
    assert plan.status == "optimal", plan.diagnosis
    return Solved(ctx.problem, ctx.catalog, plan)


def _solve_text(text: str) -> Solved:
    return _solve(loads_problem(textwrap.dedent(text), "test.yaml"))


def _has(errs: list[str], *phrases: str) -> bool:
    return any(all(p in e for p in phrases) for e in errs)


def _row(plan: Plan, name: str) -> ConstraintRow:
    return next(c for c in plan.constraints if c.name == name)


def _job(plan: Plan, name: str) -> TrainingRow:
    return next(t for t in plan.training if t.name == name)


# A lab that trains (a chain, a late release) and serves on L4 servers, under every site and
# purchase limit: budget, power, racks, stock and one GPU type.
LAB = f"""
name: lab
horizon_years: 3
finance:
  budget_usd: 2000000
site:
  power_kw: 200
  racks: 6
catalog:
  # the low-profile 8-card server (a 4-card one would halve the spares a failed server costs)
  exclude: [{_exclude("L40S", "L4")}, pcie-4gpu-2u]
  stock: {{L4: 32, L40S: 0}}  # L40S in the catalog (tests put it where it cannot go), none to buy
policy:
  max_gpu_types: 1
training:
  - name: first
    model: llama-3.1-8b
    method: lora
    tokens: 2.0e9
    deadline_days: 20
  - name: second
    model: llama-3.1-8b
    method: lora
    tokens: 1.0e9
    deadline_days: 30
    after: [first]
  - name: late
    model: llama-3.1-8b
    method: lora
    tokens: 1.0e9
    release_day: 10
    deadline_days: 40
inference:
  - name: chat
    model: llama-3.1-8b
    precisions: [bf16, fp8]
    requests_per_s: 10
    input_tokens: 1000
    output_tokens: 250
    ttft_ms: 300
    tpot_ms: 50
    spare_replicas: 1
"""

# One job too large for a server: H100 servers on a scale-out fabric, with its switch.
FABRIC = f"""
name: fabric
catalog:
  exclude: [{_exclude("H100-SXM")}]
training:
  - name: wide
    model: llama-3.1-8b
    tokens: 2.0e11
    deadline_days: 10
"""

# A request-size mix routed to replica kinds (tests/test_mix.py), with a spare replica.
MIX = f"""
name: mix
catalog:
  exclude: [{_exclude("L40S", "H100-NVL")}]
finance:
  ops_usd_per_gpu_type_year: 0  # routing across two kinds is what the fixture is for
policy:
  simplicity_tolerance: 0
inference:
  - name: chat
    model: llama-3.1-8b
    precisions: [fp8, int4]
    requests_per_s: 100
    ttft_ms: 1500
    tpot_ms: 60
    spare_replicas: 1
    mix:
      slices: 20
      buckets:
        - {{name: short, input_tokens: 256, output_tokens: 128, share: 0.8}}
        - {{name: long, input_tokens: 16000, output_tokens: 1000, share: 0.2}}
"""

# A generic (non-LLM) service with a mix: planned from per-bucket benchmarks alone.
GENERIC_MIX = f"""
name: generic-mix
catalog:
  exclude: [{_exclude("L4", "L40S")}]
inference:
  - name: ocr
    requests_per_s: 50
    spare_replicas: 1
    mix:
      slices: 10
      buckets:
        - {{name: small, input_tokens: 100, output_tokens: 10, share: 0.7}}
        - {{name: big, input_tokens: 2000, output_tokens: 10, share: 0.3}}
    measured:
      - {{gpu: L4, bucket: small, requests_per_s: 20}}
      - {{gpu: L4, bucket: big, requests_per_s: 2}}
      - {{gpu: L40S, bucket: small, requests_per_s: 30}}
      - {{gpu: L40S, bucket: big, requests_per_s: 10}}
"""

# A user's benchmark that beats the model, and a generic service (tests/test_measured.py).
MEASURED = f"""
name: measured
catalog:
  exclude: [{_exclude("L4", "T4", "L40S")}]
inference:
  - name: chat
    model: llama-3.1-8b
    precisions: [fp8]
    requests_per_s: 40
    tpot_ms: 50
    ttft_ms: 1000
    measured:
      - {{gpu: L4, precision: fp8, gpus_per_replica: 1, requests_per_s: 40, tpot_ms: 30}}
  - name: ocr
    requests_per_s: 100
    spare_replicas: 1
    measured:
      - {{gpu: T4, requests_per_s: 12}}
      - {{gpu: L4, requests_per_s: 30}}
"""

# Demand that doubles every year, bought by year at falling prices (tests/test_growth.py).
GROWTH = f"""
name: growth
catalog:
  exclude: [{_exclude("L40S", "H100-SXM")}]
  price_decline_per_year: {{default: 0.15}}
policy:
  purchases: yearly
inference:
  - name: chat
    model: llama-3.1-8b
    precisions: [fp8]
    requests_per_s: 10
    growth_per_year: 1.0
    input_tokens: 1000
    output_tokens: 250
    ttft_ms: 1000
    tpot_ms: 40
    disaggregation: never  # split, one L40S prefill + one decode serve every year: nothing bought later
"""

# Everything rented: a short job on demand, the service at a quoted hourly price (tests/test_rent.py).
RENT = f"""
name: rent
finance:
  rent: on_demand
catalog:
  exclude: [{_exclude("H100-SXM", "L40S", "L4")}]
  rent_usd_per_gpu_hour: {{L4: 0.01}}
training:
  - name: burst
    model: llama-3.1-8b
    tokens: 2.0e10
    deadline_days: 20
inference:
  - name: chat
    model: llama-3.1-8b
    precisions: [fp8]
    requests_per_s: 30
    tpot_ms: 60
    ttft_ms: 1500
"""


@pytest.fixture(scope="module")
def lab() -> Solved:
    return _solve_text(LAB)


@pytest.fixture(scope="module")
def fabric() -> Solved:
    return _solve_text(FABRIC)


@pytest.fixture(scope="module")
def mix() -> Solved:
    return _solve_text(MIX)


@pytest.fixture(scope="module")
def generic_mix() -> Solved:
    return _solve_text(GENERIC_MIX)


@pytest.fixture(scope="module")
def measured() -> Solved:
    return _solve_text(MEASURED)


@pytest.fixture(scope="module")
def growth() -> Solved:
    return _solve_text(GROWTH)


@pytest.fixture(scope="module")
def rent() -> Solved:
    return _solve_text(RENT)


@pytest.fixture(scope="module")
def workstation() -> Solved:
    """An example problem users copy from: budget, site power, racks and a deadline."""
    return _solve(load_problem(PROBLEMS / "qlora-workstation.yaml"))


FIXTURES = ["lab", "fabric", "mix", "generic_mix", "measured", "growth", "rent", "workstation"]


@pytest.mark.parametrize("name", FIXTURES)
def test_the_unbroken_plan_verifies_clean(name: str, request: pytest.FixtureRequest) -> None:
    s: Solved = request.getfixturevalue(name)
    assert s.verify(s.plan) == []
    assert s.plan.verification == []


def test_an_infeasible_plan_has_nothing_to_verify() -> None:
    text = (PROBLEMS / "qlora-workstation.yaml").read_text().replace("budget_usd: 28000 ", "budget_usd: 1000 ")
    loaded = loads_problem(text, "qlora-workstation.yaml")
    ctx = prepare(loaded)
    plan = plan_context(ctx)
    assert plan.status == "infeasible" and plan.diagnosis is not None
    assert verify(ctx.problem, ctx.catalog, plan) == []


def test_the_fixtures_have_the_features_they_are_for(
    lab: Solved, fabric: Solved, mix: Solved, generic_mix: Solved, measured: Solved, growth: Solved, rent: Solved
) -> None:
    assert {t.name for t in lab.plan.training} == {"first", "second", "late"}
    assert fabric.plan.network and fabric.plan.training[0].fabric != "none"
    assert len(mix.plan.inference[0].replicas) == 2 and mix.plan.inference[0].routing
    assert all(r.source == "measured" for r in generic_mix.plan.inference[0].replicas)
    assert {r.source for s in measured.plan.inference for r in s.replicas} == {"measured"}
    assert {r.year for r in growth.plan.inference} == {1, 2, 3} and len({r.year for r in growth.plan.servers}) > 1
    assert rent.plan.training[0].rented and all(r.rented for r in rent.plan.inference[0].replicas)


# ---------------------------------------------------------------- servers, network, money


def test_a_unit_price_off_the_catalog(lab: Solved) -> None:
    plan = lab.broken()
    plan.servers[0].unit_price_usd += 1000
    errs = lab.verify(plan)
    assert _has(errs, "pcie-8x-lowprofile-2u+L4 (year 0): unit price 36000.0 != catalog 35000"), errs


def test_a_later_years_unit_price_must_carry_the_decline(growth: Solved) -> None:
    plan = growth.broken()
    later = next(r for r in plan.servers if r.year > 0)
    later.unit_price_usd = plan.servers[0].unit_price_usd  # the year-0 price, undeclined
    errs = growth.verify(plan)
    assert _has(errs, f"(year {later.year}): unit price"), errs


def test_a_server_that_cannot_hold_its_gpu(lab: Solved) -> None:
    plan = lab.broken()
    plan.servers[0].gpu = "L40S"  # in the catalog, but not a low-profile card
    errs = lab.verify(plan)
    assert _has(errs, "server pcie-8x-lowprofile-2u cannot hold L40S"), errs


def test_an_excluded_gpu_bought(lab: Solved) -> None:
    # The pipeline's (restricted) catalog has no excluded GPU at all, so this check is reached
    # only with the whole catalog: verify() with the restricted one raises KeyError instead.
    plan = lab.broken()
    plan.servers[0].gpu = "T4"  # the same chassis holds it; the problem excludes it
    errs = verify(lab.problem, load_catalog(), plan)
    assert _has(errs, "T4 is excluded by the problem but bought"), errs


def test_too_few_racks_for_a_pool(lab: Solved) -> None:
    plan = lab.broken()
    plan.servers[0].racks = 0
    plan.racks -= 1
    errs = lab.verify(plan)
    n = plan.servers[0].count
    assert _has(errs, f"pcie-8x-lowprofile-2u+L4: {n} servers need 1 racks, plan has 0"), errs


def test_the_racks_total_must_add_up(lab: Solved) -> None:
    plan = lab.broken()
    plan.racks += 1
    errs = lab.verify(plan)
    assert errs == ["racks: plan says 2, rows add to 1"]


def test_it_power_must_match_the_servers(lab: Solved) -> None:
    plan = lab.broken()
    plan.it_power_kw += 1
    errs = lab.verify(plan)
    assert errs == [f"IT power {plan.it_power_kw} kW != recomputed {lab.plan.it_power_kw:.3f} kW"]


def test_a_purchase_rows_extended_price(lab: Solved) -> None:
    plan = lab.broken()
    row = plan.purchase[0]
    row.extended_price_usd += 1000
    plan.capex_usd += 1000  # the list still sums to the capex: only the row is wrong
    _row(plan, "budget").used += 1000
    errs = lab.verify(plan)
    assert errs[0] == f"purchase {row.sku}: {row.quantity} x {row.unit_price_usd} != {row.extended_price_usd}"
    # capex is recomputed from the rows: the extra $1,000 is nowhere in the hardware
    assert _has(errs, f"capex: plan says {plan.capex_usd:,.2f}, its servers, network and racks cost"), errs


def test_capex_must_be_the_purchase_list(lab: Solved) -> None:
    plan = lab.broken()
    plan.capex_usd += 1000
    errs = lab.verify(plan)
    assert errs[0] == f"purchase list sums to {lab.plan.capex_usd}, capex is {plan.capex_usd}"
    assert _has(errs, f"capex: plan says {plan.capex_usd:,.2f}, its servers, network and racks cost"), errs
    assert _has(errs, "cash flows carry"), errs


def test_network_ports_must_be_the_servers_nics(fabric: Solved) -> None:
    plan = fabric.broken()
    plan.network[0]["ports"] += 8
    errs = fabric.verify(plan)
    assert _has(errs, "fabric roce-400g: 40 ports, servers have 32 NICs"), errs


def test_a_network_short_of_switches(fabric: Solved) -> None:
    plan = fabric.broken()
    plan.network[0]["leaves"] = 0
    errs = fabric.verify(plan)
    assert _has(errs, "fabric roce-400g: 32 ports need 1 leaves and 0 spines"), errs


def test_servers_on_a_fabric_with_no_network(fabric: Solved) -> None:
    plan = fabric.broken()
    plan.network = []
    errs = fabric.verify(plan)
    assert _has(errs, "servers on fabrics ['roce-400g'] but no network bought"), errs


def test_cash_flows_must_sum_to_the_tco(lab: Solved) -> None:
    plan = lab.broken()
    plan.cash_flows[0].present_value_usd += 1000
    errs = lab.verify(plan)
    assert len(errs) == 1 and errs[0].startswith("cash flows sum to"), errs


def test_the_tco_breakdown_must_add_up(lab: Solved) -> None:
    plan = lab.broken()
    key = next(iter(plan.tco_breakdown_usd))
    plan.tco_breakdown_usd[key] += 1000
    assert lab.verify(plan) == ["TCO breakdown does not add up to the TCO"]


# ---------------------------------------------------------------- GPUs in use, rent


def test_workloads_need_more_gpus_than_bought(lab: Solved) -> None:
    plan = lab.broken()
    plan.servers[0].count -= 1
    errs = lab.verify(plan)
    left = plan.servers[0].count * 8
    assert _has(errs, "pcie-8x-lowprofile-2u/L4/none: year 1: workloads need", f"plan has {left}"), errs


def test_each_years_gpus_against_that_years_servers(growth: Solved) -> None:
    plan = growth.broken()
    last = max(r.year for r in plan.servers)
    plan.servers = [r for r in plan.servers if r.year != last]
    errs = growth.verify(plan)
    assert _has(errs, f"year {last + 1}: workloads need"), errs


def test_a_job_spanning_servers_needs_a_fabric(fabric: Solved) -> None:
    plan = fabric.broken()
    plan.training[0].fabric = "none"
    errs = fabric.verify(plan)
    assert _has(errs, "job wide: 32 GPUs span servers without a fabric"), errs


def test_a_job_larger_than_its_server_without_a_fabric(lab: Solved) -> None:
    plan = lab.broken()
    _job(plan, "first").gpus = 9
    errs = lab.verify(plan)
    assert _has(errs, "job first: 9 GPUs span servers without a fabric"), errs


def test_a_rented_job_at_another_price(rent: Solved) -> None:
    plan = rent.broken()
    plan.training[0].rent_usd_per_gpu_hour = 0.5
    errs = rent.verify(plan)
    assert errs == ["job burst: rented at 0.5, not the catalog's on-demand price"]


def test_a_rented_replica_at_another_price(rent: Solved) -> None:
    plan = rent.broken()
    rep = plan.inference[0].replicas[0]
    rep.rent_usd_per_gpu_hour = 0.5  # the problem quotes 0.01
    errs = rent.verify(plan)
    assert errs == [f"service chat: {rep.gpu} rented at 0.5, not the on_demand price"]


# ---------------------------------------------------------------- training schedule


def test_a_job_missing_from_the_plan(lab: Solved) -> None:
    plan = lab.broken()
    plan.training = [t for t in plan.training if t.name != "late"]
    errs = lab.verify(plan)
    assert _has(errs, "job late is not in the plan"), errs


def test_a_job_started_before_its_release_day(lab: Solved) -> None:
    plan = lab.broken()
    late = _job(plan, "late")
    late.start_day, late.end_day = 5.0, 5.0 + late.days
    errs = lab.verify(plan)
    assert _has(errs, "job late starts on day 5.0 before its release day 10.0"), errs


def test_a_job_that_ends_before_it_is_done(lab: Solved) -> None:
    plan = lab.broken()
    first = _job(plan, "first")
    first.end_day = first.start_day + first.days / 2
    errs = lab.verify(plan)
    assert _has(errs, "job first: end", "is before start + duration"), errs


def test_a_job_started_before_the_job_it_follows(lab: Solved) -> None:
    plan = lab.broken()
    second = _job(plan, "second")
    second.start_day = 1.0
    second.end_day = 1.0 + second.days
    errs = lab.verify(plan)
    assert _has(errs, "job second starts before first ends"), errs


# ---------------------------------------------------------------- services


def test_a_service_missing_from_the_plan(lab: Solved) -> None:
    plan = lab.broken()
    plan.inference = []
    errs = lab.verify(plan)
    assert _has(errs, "service chat is not in the plan"), errs


def test_a_service_planned_for_less_than_its_demand(lab: Solved) -> None:
    plan = lab.broken()
    plan.inference[0].required_rps = 15.0
    errs = lab.verify(plan)
    assert _has(errs, "service chat: plans for 15.0 rps, demand is 10"), errs


def test_a_years_row_planned_for_another_years_demand(growth: Solved) -> None:
    plan = growth.broken()
    row = next(r for r in plan.inference if r.year == 2)
    row.required_rps = 10.0  # year 1's demand
    errs = growth.verify(plan)
    assert _has(errs, "service chat (year 2): plans for 10.0 rps, demand is 20"), errs


def test_a_replica_claiming_more_than_the_model(lab: Solved) -> None:
    plan = lab.broken()
    rep = plan.inference[0].replicas[0]
    rep.rps_per_replica *= 2
    errs = lab.verify(plan)
    assert _has(errs, f"service chat: L4 x{rep.gpus_per_replica} fp8: claims {rep.rps_per_replica} rps >"), errs


def test_a_replica_claiming_another_p99_latency(lab: Solved) -> None:
    plan = lab.broken()
    plan.inference[0].replicas[0].ttft_ms -= 50
    errs = lab.verify(plan)
    assert _has(errs, "service chat: L4", "claims p99 TTFT/TPOT"), errs


def test_a_replica_at_a_precision_the_service_does_not_allow(lab: Solved) -> None:
    plan = lab.broken()
    plan.inference[0].replicas[0].precision = "int4"
    errs = lab.verify(plan)
    assert _has(errs, "service chat: L4", "int4: precision not allowed"), errs


def test_a_replica_batch_that_does_not_fit(lab: Solved) -> None:
    plan = lab.broken()
    plan.inference[0].replicas[0].batch = 100_000
    errs = lab.verify(plan)
    assert _has(errs, "service chat: L4", "does not fit: concurrency 100000"), errs


def test_a_measured_replica_claiming_more_than_measured(measured: Solved) -> None:
    plan = measured.broken()
    chat = next(s for s in plan.inference if s.name == "chat")
    chat.replicas[0].rps_per_replica = 50.0
    errs = measured.verify(plan)
    assert _has(errs, "service chat: L4 x1 fp8: claims 50.0 rps > measured 40.0"), errs


def test_a_measured_replica_with_no_such_measurement(measured: Solved) -> None:
    plan = measured.broken()
    chat = next(s for s in plan.inference if s.name == "chat")
    chat.replicas[0].gpus_per_replica = 2
    errs = measured.verify(plan)
    assert _has(errs, "service chat: L4 x2 fp8: marked measured, but the problem has no such measurement"), errs


def test_a_generic_service_has_only_measured_replicas(measured: Solved) -> None:
    plan = measured.broken()
    ocr = next(s for s in plan.inference if s.name == "ocr")
    ocr.replicas[0].source = "model"
    errs = measured.verify(plan)
    assert _has(errs, "service ocr: L4", "a generic service has only measured replicas"), errs


# ---------------------------------------------------------------- request-size mix


def test_routing_that_does_not_list_the_buckets(mix: Solved) -> None:
    plan = mix.broken()
    plan.inference[0].routing = plan.inference[0].routing[:1]
    errs = mix.verify(plan)
    assert _has(errs, "service chat: routing does not list the mix's buckets"), errs


def test_a_bucket_not_routed_whole(mix: Solved) -> None:
    plan = mix.broken()
    plan.inference[0].routing[1].routes[0].share = 0.5
    errs = mix.verify(plan)
    assert _has(errs, "service chat: bucket long routed 0.5000 of its requests"), errs


def test_a_share_that_is_not_whole_slices(mix: Solved) -> None:
    plan = mix.broken()
    short = plan.inference[0].routing[0]
    route = short.routes[0]
    other = 1 - route.replica  # the other replica kind
    rep = plan.inference[0].replicas[other]
    route.share -= 0.025  # half a slice of 20 moved; the two still add to the whole bucket
    short.routes.append(
        RouteShare(
            replica=other,
            gpu=rep.gpu,
            precision=rep.precision,
            gpus_per_replica=rep.gpus_per_replica,
            share=0.025,
            rps=route.rps * 0.025,
            ttft_ms=route.ttft_ms,
            tpot_ms=route.tpot_ms,
        )
    )
    errs = mix.verify(plan)
    assert _has(errs, f"service chat: bucket short: share {route.share} is not whole slices"), errs
    assert not _has(errs, "routed"), errs


def test_a_routed_kind_at_a_precision_the_service_does_not_allow(mix: Solved) -> None:
    plan = mix.broken()
    route = plan.inference[0].routing[0].routes[0]
    plan.inference[0].replicas[route.replica].precision = "bf16"
    errs = mix.verify(plan)
    assert _has(errs, f"service chat: bucket short on {route.gpu}", "precision not allowed"), errs


def test_a_routed_kind_that_does_not_fit_the_model(mix: Solved) -> None:
    plan = mix.broken()
    route = plan.inference[0].routing[1].routes[0]
    rep = plan.inference[0].replicas[route.replica]
    rep.gpu, rep.gpus_per_replica, rep.precision = "L40S", 1, "bf16"  # not a precision the service allows
    errs = mix.verify(plan)
    assert _has(errs, "service chat: bucket long on L40S x1: precision not allowed"), errs


def test_a_bucket_on_a_kind_with_no_benchmark_for_it(generic_mix: Solved) -> None:
    plan = generic_mix.broken()
    plan.inference[0].replicas[0].precision = "fp8"  # the benchmarks are at bf16
    errs = generic_mix.verify(plan)
    assert _has(errs, "service ocr: bucket small on", "no measurement for this bucket"), errs


def test_a_kind_with_fewer_replicas_than_its_routed_load(mix: Solved) -> None:
    plan = mix.broken()
    route = plan.inference[0].routing[0].routes[0]
    rep = plan.inference[0].replicas[route.replica]
    rep.count = 0
    errs = mix.verify(plan)
    assert _has(errs, f"service chat: {rep.gpu} needs", "replicas, plan has 0"), errs


def test_a_mix_without_its_spare_replica(mix: Solved) -> None:
    plan = mix.broken()
    total = sum(r.count for r in plan.inference[0].replicas)
    # the same plan against a problem asking for more spares than it has replicas in all
    svc = mix.problem.inference[0].model_copy(update={"spare_replicas": total})
    errs = verify(mix.problem.model_copy(update={"inference": [svc]}), mix.catalog, plan)
    # every kind is short of what it carries once that many servers are down
    for rep in plan.inference[0].replicas:
        assert _has(errs, f"service chat: {rep.gpu} x{rep.gpus_per_replica} needs", f"with {total} server(s) down"), (
            errs
        )
    assert _has(errs, f"service:chat:spares: 1.000 domains < {total}.000 allowed"), errs


# ---------------------------------------------------------------- the named limits


def _extra_capex(plan: Plan, usd: float) -> None:
    """Buy something more (and say so consistently everywhere but the limits report)."""
    plan.purchase.append(
        PurchaseRow(
            category="other",
            item="extra",
            sku="extra",
            quantity=1,
            unit_price_usd=usd,
            extended_price_usd=usd,
            unit_power_w=0.0,
        )
    )
    plan.capex_usd += usd


def _budget(s: Solved, usd: float) -> Problem:
    """The solved problem with a smaller budget: its plan, unchanged, now spends too much."""
    return s.problem.model_copy(update={"finance": s.problem.finance.model_copy(update={"budget_usd": usd})})


def test_budget_exceeded(lab: Solved) -> None:
    plan = lab.broken()
    errs = verify(_budget(lab, plan.capex_usd - 1000), lab.catalog, plan)
    assert errs == [f"budget: {plan.capex_usd:,.3f} usd > {plan.capex_usd - 1000:,.3f} allowed"], errs


def test_capex_the_hardware_does_not_explain(lab: Solved) -> None:
    """A purchase line that buys nothing the plan runs: capex no longer matches the rows."""
    plan = lab.broken()
    before = plan.capex_usd
    _extra_capex(plan, 2_000_000)
    _row(plan, "budget").used += 2_000_000
    errs = lab.verify(plan)
    assert any(e.startswith(f"capex: plan says {before + 2_000_000:,.2f}") for e in errs), errs


def test_budget_exceeded_in_an_example_problem(workstation: Solved) -> None:
    plan = workstation.broken()
    errs = verify(_budget(workstation, plan.capex_usd - 100), workstation.catalog, plan)
    assert any(e.startswith("budget:") and f"> {plan.capex_usd - 100:,.3f} allowed" in e for e in errs), errs


def test_site_power_exceeded(lab: Solved) -> None:
    plan = lab.broken()
    plan.servers[0].count += 200
    errs = lab.verify(plan)
    assert any(e.startswith("site_power:") and "> 200.000 allowed" in e for e in errs), errs


def test_racks_exceeded(lab: Solved) -> None:
    plan = lab.broken()
    plan.servers[0].racks += 6
    plan.racks += 6
    errs = lab.verify(plan)
    assert any(e.startswith("racks: 7.000 racks > 6.000 allowed") for e in errs), errs


def test_a_deadline_missed(lab: Solved) -> None:
    plan = lab.broken()
    late = _job(plan, "late")
    late.start_day = 40.0 - late.days + 5  # ends five days after its deadline
    late.end_day = late.start_day + late.days
    errs = lab.verify(plan)
    assert any(e.startswith("job:late:deadline:") and "> 40.000 allowed" in e for e in errs), errs


def test_a_service_rate_not_carried(lab: Solved) -> None:
    plan = lab.broken()
    plan.inference[0].replicas[0].count -= 2
    errs = lab.verify(plan)
    assert any(e.startswith("service:chat:rate:") and "< 10.000 allowed" in e for e in errs), errs


def test_a_middle_year_short_of_its_demand(growth: Solved) -> None:
    """The rate limit reads every year's row, not only the peak year's."""
    plan = growth.broken()
    row = next(r for r in plan.inference if r.year == 2)
    row.replicas[0].count -= 1
    errs = growth.verify(plan)
    assert any(e.startswith("service:chat:rate:") and "< 20.000 allowed" in e for e in errs), errs


@pytest.mark.parametrize("target", ["ttft", "tpot"])
def test_a_latency_target_missed(lab: Solved, target: str) -> None:
    plan = lab.broken()
    rep = plan.inference[0].replicas[0]
    over = 2 * getattr(lab.problem.inference[0], f"{target}_ms")  # a replica that claims twice the target
    setattr(rep, f"{target}_ms", over)
    setattr(rep, f"{target}_p99_ms", over)
    errs = lab.verify(plan)
    assert _has(errs, "service chat: L4", "claims p99 TTFT/TPOT"), errs  # the model does not say so


def test_stock_exceeded(lab: Solved) -> None:
    plan = lab.broken()
    plan.servers.append(plan.servers[0].model_copy())  # as many L4 again in year 0; the stock is 32
    errs = lab.verify(plan)
    bought = 2 * plan.servers[0].count * 8
    assert bought > 32
    assert any(e.startswith(f"stock:L4: {bought}.000 gpus > 32.000 allowed") for e in errs), errs


def test_more_gpu_types_than_the_policy_allows(lab: Solved) -> None:
    plan = lab.broken()
    extra = plan.servers[0].model_copy(update={"server": "pcie-4gpu-2u", "gpu": "L40S", "gpus_per_server": 4})
    plan.servers.append(extra)
    errs = lab.verify(plan)
    assert any(e.startswith("policy:max_gpu_types: 2.000 types > 1.000 allowed") for e in errs), errs


@pytest.mark.parametrize("name", FIXTURES)
def test_every_limits_report_row_is_checked(name: str, request: pytest.FixtureRequest) -> None:
    """Each row of the limits report, altered or removed, is a violation of its own."""
    s: Solved = request.getfixturevalue(name)
    assert s.plan.constraints
    for i, row in enumerate(s.plan.constraints):
        altered = s.broken()
        altered.constraints[i].used = row.used + max(1.0, abs(row.used))
        errs = s.verify(altered)
        assert _has(errs, f"{row.name}: the limits report says"), (row.name, errs)
        assert len(errs) == 1, errs
        removed = s.broken()
        del removed.constraints[i]
        assert s.verify(removed) == [f"{row.name}: missing from the plan's limits report"]


# --- checks that recompute what the plan used to be trusted on -------------------------------


def test_an_excluded_gpu_against_the_pipelines_own_catalog(lab: Solved) -> None:
    """The restricted catalog has no excluded GPU: a violation, not a KeyError."""
    plan = lab.broken()
    plan.servers[0].gpu = "T4"
    errs = lab.verify(plan)
    assert _has(errs, "not in the catalog this problem may buy from"), errs


def test_a_job_whose_days_are_not_what_it_takes(lab: Solved) -> None:
    plan = lab.broken()
    t = plan.training[0]
    t.days, t.end_day = 1.0, t.start_day + 1.0
    errs = lab.verify(plan)
    assert any(e.startswith(f"job {t.name}: takes 1 days in the plan") for e in errs), errs


def test_renting_when_the_problem_rents_nothing(lab: Solved) -> None:
    plan = lab.broken()
    svc = plan.inference[0]
    svc.replicas[0].rented = True
    errs = lab.verify(plan)
    assert _has(errs, "rented, but the problem rents nothing (finance.rent: none)"), errs


def test_buying_when_the_problem_only_rents(lab: Solved) -> None:
    rent_only = lab.problem.model_copy(update={"finance": lab.problem.finance.model_copy(update={"buy": False})})
    errs = verify(rent_only, lab.catalog, lab.broken())
    assert _has(errs, "bought, but the problem only rents (finance.buy: false)"), errs


def test_a_mix_kind_claiming_ten_times_its_rate(mix: Solved) -> None:
    plan = mix.broken()
    rep = next(r for r in plan.inference[0].replicas if r.rps_per_replica > 0)
    rep.rps_per_replica *= 10
    errs = mix.verify(plan)
    assert _has(errs, f"{rep.gpu} claims {rep.rps_per_replica} rps per replica for the requests sent to it"), errs


def test_a_route_to_an_unlisted_replica_kind(mix: Solved) -> None:
    plan = mix.broken()
    route = plan.inference[0].routing[0].routes[0]
    route.replica = len(plan.inference[0].replicas) + 3
    errs = mix.verify(plan)
    assert _has(errs, f"routed to replica kind {route.replica}, not listed"), errs


def test_a_network_on_a_fabric_the_catalog_lacks(fabric: Solved) -> None:
    plan = fabric.broken()
    plan.network[0]["fabric"] = "warp-drive"
    errs = fabric.verify(plan)
    assert _has(errs, "fabric warp-drive: not in the catalog"), errs


def test_a_job_rented_when_the_problem_rents_nothing(lab: Solved) -> None:
    plan = lab.broken()
    plan.training[0].rented = True
    errs = lab.verify(plan)
    assert _has(errs, f"job {plan.training[0].name}: rented, but the problem rents nothing"), errs


def test_a_job_on_a_server_the_catalog_lacks(lab: Solved) -> None:
    plan = lab.broken()
    t = plan.training[0]
    t.server = "no-such-chassis"
    errs = lab.verify(plan)
    assert _has(errs, f"job {t.name}: server no-such-chassis is not in the catalog"), errs
    assert _has(errs, f"job {t.name}: no-such-chassis+{t.gpu} on {t.fabric} is not in the catalog"), errs


def test_a_replica_on_a_gpu_the_catalog_lacks(lab: Solved) -> None:
    plan = lab.broken()
    plan.inference[0].replicas[0].gpu = "T4"
    errs = lab.verify(plan)
    assert _has(errs, "not in the catalog this problem may buy from (excluded?)"), errs
