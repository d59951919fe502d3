"""The consolidated start (optimize.consolidate): services gathered on fewer pools, a plan of
the model, and a start that changes no optimum."""

from __future__ import annotations

import math
import textwrap

import pytest
from ortools.sat.python import cp_model

from planner.catalog import Catalog
from planner.context import prepare
from planner.io.problem_io import loads_problem
from planner.optimize import consolidate
from planner.optimize.model import build
from planner.optimize.solve import solve

KEEP = ("L4", "L40S", "H100-SXM")
RATES = (3, 7, 12, 5, 9, 2, 15, 4)  # requests/s of eight small services


def _problem(catalog: Catalog) -> str:
    exclude = [g for g in catalog.gpus if g not in KEEP]
    services = "".join(
        f"""
          - name: svc-{i}
            model: llama-3.1-8b
            requests_per_s: {rate}
            input_tokens: {512 + 128 * (i % 3)}
            output_tokens: {128 + 64 * (i % 2)}
            ttft_ms: 2000
            tpot_ms: {60 + 20 * (i % 3)}
            spare_replicas: {i % 2}"""
        for i, rate in enumerate(RATES)
    )
    return textwrap.dedent(
        f"""
        name: eight-services
        horizon_years: 3
        finance: {{budget_usd: 50000000, electricity_usd_per_kwh: 0.1}}
        site: {{power_kw: 2000, racks: 40}}
        catalog: {{exclude: {exclude}}}
        inference:"""
    ) + textwrap.indent(textwrap.dedent(services), "")


@pytest.fixture(scope="module")
def built(catalog: Catalog):  # type: ignore[no-untyped-def]
    ctx = prepare(loads_problem(_problem(catalog), "eight.yaml"))
    return build(ctx.problem, ctx.catalog, ctx.workloads)


def _pools(b, mixes) -> set:  # type: ignore[no-untyped-def]
    return {key for mix in mixes.values() for key in mix.gpus}


def test_consolidation_never_costs_more_nor_opens_a_pool(built) -> None:  # type: ignore[no-untyped-def]
    floors = {n: f for n, f in sorted(built.floors.items()) if f.found is not None}
    assert len(floors) == len(RATES) >= consolidate.MIN_SERVICES
    own = {n: consolidate._mix(f, f.found[1]) for n, f in floors.items()}
    consolidated = consolidate._consolidate(built, floors, own)
    gathered = consolidate._refill(built, floors, consolidated)
    assert consolidate._cost(built, gathered) <= consolidate._cost(built, consolidated) <= consolidate._cost(built, own)
    assert _pools(built, gathered) <= _pools(built, consolidated) <= _pools(built, own)
    # here the floors' own mixes spread 8 services over 4 pools of part-filled servers
    assert len(_pools(built, gathered)) < len(_pools(built, own))
    assert consolidate._cost(built, gathered) < consolidate._cost(built, own)
    # whole servers by hand: each pool's GPUs rounded up, at the GPU's share price
    used: dict = {}
    for mix in gathered.values():
        for key, g in mix.gpus.items():
            used[key] = used.get(key, 0) + g
    per = {k: built.pools[k].spec.gpus_per_server for k in used}
    by_hand = sum(built.gpu_share_usd[k] * per[k] * math.ceil(g / per[k]) for k, g in used.items())
    assert consolidate._cost(built, gathered) == by_hand + sum(m.rent_usd for m in gathered.values())


def test_each_service_still_carries_its_demand(built) -> None:  # type: ignore[no-untyped-def]
    floors = {n: f for n, f in sorted(built.floors.items()) if f.found is not None}
    own = {n: consolidate._mix(f, f.found[1]) for n, f in floors.items()}
    gathered = consolidate._refill(built, floors, consolidate._consolidate(built, floors, own))
    for name, mix in gathered.items():
        f = floors[name]
        carried = sum(per * n for per, n, (o, _) in zip(f.pers, mix.counts, f.reps, strict=True) if not o.disaggregated)
        assert carried >= f.need, name


def test_the_start_is_a_plan_and_changes_no_optimum(built) -> None:  # type: ignore[no-untyped-def]
    starts = consolidate.start_model(built)
    assert starts is not None
    fixed, choosing = (solve(start, 30.0) for start in starts)
    free = solve(built.model, 30.0)
    both = solve(built.model, 30.0, start_from=starts)
    assert fixed.status in ("optimal", "feasible")
    assert choosing.status in ("optimal", "feasible")
    assert free.status == both.status == "optimal"
    # each start's plan is one of the model's: no cheaper than its optimum; the starts move no optimum
    assert fixed.objective >= choosing.objective >= free.objective  # the fixed mixes are among the choices
    assert both.objective == free.objective
    assert not built.model.proto.solution_hint.vars  # no hint left behind for later solves


def test_no_start_for_few_services(catalog: Catalog) -> None:
    text = _problem(catalog).split("\n- name: svc-3")[0]
    ctx = prepare(loads_problem(text, "three.yaml"))
    b = build(ctx.problem, ctx.catalog, ctx.workloads)
    assert len(b.floors) == 3
    assert consolidate.start_model(b) is None


def test_a_start_that_cannot_be_completed_leaves_the_search_as_it_was(built) -> None:  # type: ignore[no-untyped-def]
    start = built.model.clone()
    start.add(sum(start.get_int_var_from_proto_index(p.servers.index) for p in built.pools.values()) < 0)
    plain = solve(built.model, 30.0)
    tried = solve(built.model, 30.0, start_from=start)
    assert tried.status == plain.status == "optimal"
    assert tried.objective == plain.objective
    assert isinstance(start, cp_model.CpModel)


def test_the_choosing_start_picks_one_of_each_services_choices(built) -> None:  # type: ignore[no-untyped-def]
    from planner.optimize.solve import _run

    found = consolidate.service_choices(built)
    assert found is not None
    floors, choices = found
    starts = consolidate.start_model(built)
    assert starts is not None
    fixed_model, choosing_model = starts
    fixed = _run(fixed_model, 30.0, 1)
    assert fixed.status == "optimal"
    chosen = _run(choosing_model, 30.0, 1)
    assert chosen.status == "optimal"
    values = chosen.solver.response_proto.solution
    for name, f in floors.items():
        got = tuple(values[r.index] for _, r in f.reps)
        assert got in choices[name], name
    assert chosen.objective <= fixed.objective  # the fixed start's mixes are the first choices
