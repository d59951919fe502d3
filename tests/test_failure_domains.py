"""Spares that survive a failure: a service still meets its rate with any ``spare_replicas``
servers (or racks) down.

Held against independent calculations: replicas per domain by hand; the worst domain over
*every* placement of a plan's replicas (a knapsack by enumeration: whatever fits one server
could have been put on one), not the planner's own placement; plans with spares removed or
understated, which the verifier must reject.
"""

from __future__ import annotations

import itertools
import textwrap
from collections import defaultdict

import pytest

from planner.bom import PoolKey, pool_spec, servers_per_rack
from planner.catalog import Catalog, load_catalog
from planner.context import Context
from planner.domains import Group, place, replicas_per_domain
from planner.io.problem_io import load_problem, loads_problem
from planner.pipeline import plan_context, prepare
from planner.schema.plan import InferenceRow, Plan
from planner.schema.problem import Problem
from planner.verify import verify
from tests.conftest import PROBLEMS, example_plan

EXAMPLES = ["startup.yaml", "serve-70b.yaml", "lab-train-and-serve.yaml", "inference-tight-power.yaml"]


def test_replicas_per_domain_by_hand(catalog: Catalog) -> None:
    hgx, nvl = catalog.servers["hgx-b200-8gpu"], catalog.servers["gb200-nvl72"]
    assert [replicas_per_domain(g, hgx, 4, "server") for g in (1, 2, 4, 8)] == [8, 4, 2, 1]
    # a rack of four 8-GPU servers holds 32 GPUs
    assert [replicas_per_domain(g, hgx, 4, "rack") for g in (1, 2, 8)] == [32, 16, 4]
    # NVL72: a compute tray (4 GPUs) fails alone; a replica over two trays dies with either
    assert [replicas_per_domain(g, nvl, 1, "server") for g in (1, 4, 8, 72)] == [4, 1, 1, 1]
    assert [replicas_per_domain(g, nvl, 1, "rack") for g in (1, 8, 72)] == [72, 9, 1]


def test_placement_packs_largest_first_by_hand() -> None:
    units = place([Group("b", 0, 2, 3), Group("a", 0, 4, 3)], unit_gpus=8)
    assert units == [{("a", 0): 2}, {("a", 0): 1, ("b", 0): 2}, {("b", 0): 1}]
    # wider than a unit: each unit it spans holds (a part of) one replica
    assert place([Group("a", 0, 8, 2)], unit_gpus=4) == [{("a", 0): 1}] * 4


def _worst_domain_rps(row: InferenceRow, problem: Problem, catalog: Catalog, domain: str) -> float:
    """The most capacity one domain can hold of this row's replicas under any placement:
    per pool, every count of each kind that fits the domain's GPUs together."""
    pools: dict[tuple[PoolKey, bool], list[tuple[int, int, float]]] = defaultdict(list)
    for r in row.replicas:
        pools[(PoolKey(r.server, r.gpu, r.fabric), r.rented)].append((r.gpus_per_replica, r.count, r.rps_per_replica))
    worst = 0.0
    for (key, _), kinds in pools.items():
        spec = pool_spec(catalog, key)
        unit = spec.chassis.gpus_per_tray or spec.gpus_per_server
        if domain == "rack":
            unit = spec.gpus_per_server * (servers_per_rack(spec, problem.site) or 1)
        for counts in itertools.product(*[range(n + 1) for _, n, _ in kinds]):
            gpus = sum(c * g for c, (g, _, _) in zip(counts, kinds, strict=True))
            spans = sum(1 for c, (g, _, _) in zip(counts, kinds, strict=True) if c and g > unit)
            if gpus <= unit or (spans == 1 and sum(counts) == 1):  # or one replica wider than the domain
                worst = max(worst, sum(c * rps for c, (_, _, rps) in zip(counts, kinds, strict=True)))
    return worst


def _check_survives(problem: Problem, catalog: Catalog, plan: Plan) -> int:
    services = {s.name: s for s in problem.inference}
    checked = 0
    for row in plan.inference:
        svc = services[row.name]
        if not svc.spare_replicas or svc.mix is not None:
            continue
        capacity = sum(r.count * r.rps_per_replica for r in row.replicas)
        lost = svc.spare_replicas * _worst_domain_rps(row, problem, catalog, svc.spare_domain)
        need = row.required_rps * (1 + svc.min_spare_share)
        assert capacity - lost >= need - 1e-3, f"{row.name}: {capacity} - {lost} < {need}"
        assert row.domain_loss_rps <= lost / svc.spare_replicas + 1e-3  # the plan's own figure
        checked += 1
    return checked


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_plans_survive_their_worst_server_under_any_placement(name: str) -> None:
    plan = example_plan(name)
    ctx = prepare(load_problem(PROBLEMS / name))
    assert plan.verification == []
    assert _check_survives(ctx.problem, ctx.catalog, plan) >= 1


def _copy_of(name: str) -> tuple[Context, Plan]:
    """An example's context and a copy of its plan to tamper with."""
    return prepare(load_problem(PROBLEMS / name)), example_plan(name).model_copy(deep=True)


def test_the_verifier_rejects_spares_counted_as_replicas() -> None:
    """The old rule (one replica beyond the demand) does not survive a server of several."""
    name = "startup.yaml"
    ctx, plan = _copy_of(name)
    row = plan.inference[0]
    rep = max(row.replicas, key=lambda r: r.per_domain)
    assert rep.per_domain > 1, "the example should hold several replicas per server"
    # as many replicas as carry the demand plus one
    carry = row.required_rps - sum(r.count * r.rps_per_replica for r in row.replicas if r is not rep)
    rep.count = int(max(0.0, carry) // rep.rps_per_replica) + 2
    rep.per_domain = min(rep.per_domain, rep.count)
    errs = verify(ctx.problem, ctx.catalog, plan)
    assert any("chat" in e and "rate" in e for e in errs), errs


def test_the_verifier_rejects_an_understated_domain() -> None:
    name = "startup.yaml"
    ctx, plan = _copy_of(name)
    rep = max(plan.inference[0].replicas, key=lambda r: r.per_domain)
    rep.per_domain = 1
    errs = verify(ctx.problem, ctx.catalog, plan)
    assert any("one server holds" in e for e in errs), errs


def test_the_verifier_rejects_a_domain_loss_the_replicas_do_not_add_up_to() -> None:
    name = "startup.yaml"
    ctx, plan = _copy_of(name)
    row = plan.inference[0]
    assert row.domain_loss_rps == pytest.approx(max(r.per_domain * r.rps_per_replica for r in row.replicas), abs=1e-3)
    row.domain_loss_rps /= 2
    errs = verify(ctx.problem, ctx.catalog, plan)
    assert any("domain_loss_rps" in e for e in errs), errs


def test_a_mix_kind_short_of_its_own_spares_is_rejected() -> None:
    name = "chat-mix.yaml"
    ctx, plan = _copy_of(name)
    assert plan.verification == []
    rep = plan.inference[0].replicas[0]
    rep.count -= 1
    errs = verify(ctx.problem, ctx.catalog, plan)
    assert any("left with 1 server(s) down" in e for e in errs), errs


SMALL = """
name: domains
catalog:
  exclude: [{exclude}]
site:
  rack_power_kw: 30
policy:
  simplicity_tolerance: 0
inference:
  - name: chat
    model: llama-3.1-8b
    precisions: [fp8]
    requests_per_s: 30
    input_tokens: 1024
    output_tokens: 256
    ttft_ms: 2000
    tpot_ms: 80
    {spares}
"""


def _small(spares: str) -> tuple[Problem, Catalog, Plan]:
    keep = {"H100-SXM", "L40S"}
    exclude = ", ".join(g for g in load_catalog().gpus if g not in keep)
    text = textwrap.dedent(SMALL).format(exclude=exclude, spares=spares)
    ctx = prepare(loads_problem(text, "domains.yaml"))
    return ctx.problem, ctx.catalog, plan_context(ctx)


def test_rack_spares_survive_a_rack_and_cost_more_than_server_spares() -> None:
    none, server, rack = (_small(s) for s in ("", "spare_replicas: 1", "spare_replicas: 1\n    spare_domain: rack"))
    for problem, catalog, plan in (server, rack):
        assert plan.status == "optimal" and plan.verification == []
        assert _check_survives(problem, catalog, plan) == 1
    assert rack[2].inference[0].spare_domain == "rack"
    assert none[2].tco_usd <= server[2].tco_usd <= rack[2].tco_usd
    # what a rack holds is at least what a server does
    assert rack[2].inference[0].domain_loss_rps >= server[2].inference[0].domain_loss_rps
