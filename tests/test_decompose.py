"""The scenario decomposition behind two-stage plans (issue 18, scale): each step against an
independent solve or a brute-force enumeration of every purchase."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from planner.assemble import assemble_plan
from planner.context import prepare
from planner.io.overrides import variant
from planner.io.problem_io import load_problem, loads_problem
from planner.pipeline import plan_problem
from planner.whatif import two_stage
from planner.whatif.decompose import context_of, cvar, forget, freeze, neighbours, new_work, remember
from planner.whatif.fixed import fixed_plan, fixed_tco, operable
from tests.test_two_stage import LOW_HIGH, ONLY_L40S, PROBLEM

ROOT = Path(__file__).resolve().parents[1]
POOLS = [("pcie-4gpu-2u", "L40S", "none"), ("pcie-8gpu-4u", "L40S", "none")]  # the newsvendor's two


def _every_purchase(most: int = 4) -> list[dict[tuple[str, str, str], int]]:
    return [dict(zip(POOLS, counts, strict=True)) for counts in itertools.product(range(most + 1), repeat=2)]


def _expected(servers: dict[tuple[str, str, str], int]) -> float | None:
    """The purchase's expected TCO over the two scenarios, each operated on the full model."""
    base = loads_problem(PROBLEM, "u.yaml")
    tcos = []
    for s in LOW_HIGH.scenarios:
        plan = fixed_plan(prepare(variant(base, dict(s.set))), servers, None)
        if plan is None:
            return None
        tcos.append(plan.tco_usd)
    return sum(0.5 * t for t in tcos)


def test_operating_the_cut_context_costs_what_the_full_model_says() -> None:
    """Only options on bought pools (or rented) are kept: the same TCO, or the same "cannot serve"."""
    base = loads_problem(PROBLEM, "u.yaml")
    for s in LOW_HIGH.scenarios:
        ctx = prepare(variant(base, dict(s.set)))
        for servers in _every_purchase(3):
            full = fixed_plan(ctx, servers, None)
            cut = fixed_tco(ctx, servers, None)
            assert (full is None) == (cut is None)
            if full is not None and cut is not None:
                assert assemble_plan(operable(ctx, servers), *cut).tco_usd == pytest.approx(full.tco_usd, abs=0.01)


def test_a_training_problem_operated_on_its_own_purchase_keeps_its_tco() -> None:
    """Startup (jobs and a service): its optimum's servers, operated on the cut context, cost the optimum."""
    loaded = load_problem(str(ROOT / "problems" / "startup.yaml"))
    plan = plan_problem(loaded)
    servers = {(r.server, r.gpu, r.fabric): r.count for r in plan.servers}
    ctx = prepare(loaded)
    cut = operable(ctx, servers)
    assert sum(len(w.training) for w in cut.workloads) < sum(len(w.training) for w in ctx.workloads) / 5
    got = fixed_tco(ctx, servers, None)
    assert got is not None
    assert assemble_plan(cut, *got).tco_usd == pytest.approx(plan.tco_usd, rel=1e-9)


def test_a_demand_scenario_derived_from_the_base_context_solves_as_a_fresh_one() -> None:
    base = loads_problem(PROBLEM, "u.yaml")
    work = new_work(base, [{"inference.chat.requests_per_s": 160, "finance.electricity_usd_per_kwh": 0.2}, {}], None)
    try:
        remember(work, 1, prepare(base))
        derived = context_of(work, 0)
        assert derived.workloads is context_of(work, 1).workloads  # not prepared again
        fresh = plan_problem(variant(base, dict(work.overrides[0])))
        from planner.pipeline import plan_context

        assert plan_context(derived).tco_usd == pytest.approx(fresh.tco_usd, abs=0.01)
    finally:
        forget(work)


@pytest.fixture(scope="module")
def brute_force() -> tuple[float, dict[tuple[str, str, str], int]]:
    """The best purchase of the newsvendor, by scoring every one with up to 4 servers per pool."""
    scored = [(e, servers) for servers in _every_purchase() if (e := _expected(servers)) is not None]
    return min(scored, key=lambda x: x[0])


def test_the_decomposition_alone_is_bracketed_by_the_brute_force_optimum(monkeypatch, brute_force) -> None:
    """Without the joint model: the purchase found costs what it says, no less than the true best,
    and the floor is no more than it."""
    monkeypatch.setattr(two_stage, "JOINT_MAX_OPTIONS", 0)
    plan = two_stage.plan_under_uncertainty(loads_problem(PROBLEM, "u.yaml"), LOW_HIGH)
    st = plan.stochastic
    assert st is not None and st["method"] == "decomposition"
    best, _ = brute_force
    servers = {(r["server"], r["gpu"], r["fabric"]): r["count"] for r in st["servers"]}
    assert _expected(servers) == pytest.approx(st["expected_tco_usd"], abs=1.0)
    assert st["expected_tco_usd"] >= best - 1.0
    assert st["lower_bound_usd"] <= best + 1.0
    gap = (st["expected_tco_usd"] - st["lower_bound_usd"]) / st["expected_tco_usd"]
    assert st["gap"] == pytest.approx(gap, abs=1e-5)


def test_with_the_joint_model_the_purchase_is_the_brute_force_optimum(brute_force) -> None:
    plan = two_stage.plan_under_uncertainty(loads_problem(PROBLEM, "u.yaml"), LOW_HIGH)
    st = plan.stochastic
    assert st is not None and st["status"] == "optimal"
    best, _ = brute_force
    assert st["expected_tco_usd"] == pytest.approx(best, abs=1.0)
    assert st["lower_bound_usd"] <= st["expected_tco_usd"] + 0.01


def test_cvar_of_a_discrete_distribution_by_hand() -> None:
    # the worst 10% of four equally likely outcomes is 40% of the worst one
    assert cvar([0.25] * 4, [100.0, 200.0, 300.0, 400.0], 0.9) == pytest.approx(400.0)
    # the worst half: the mean of the two largest
    assert cvar([0.25] * 4, [100.0, 200.0, 300.0, 400.0], 0.5) == pytest.approx(350.0)
    assert cvar([0.5, 0.5], [100.0, 200.0], 0.0) == pytest.approx(150.0)  # alpha 0: the mean


def test_the_local_search_moves_a_server_in_every_direction() -> None:
    hw = freeze({POOLS[0]: 1})
    moves = {tuple(sorted(dict(n).items())) for n in neighbours(hw, POOLS)}
    assert moves == {
        (),  # one fewer
        ((POOLS[0], 2),),
        ((POOLS[0], 1), (POOLS[1], 1)),
        ((POOLS[1], 1),),  # moved from the 4-GPU pool to the 8-GPU one
    }


def test_out_of_time_is_not_reported_as_a_scenario_nothing_can_serve() -> None:
    """A scenario whose own solve ran out of time has no answer: exit 3, never "infeasible"."""
    from planner.errors import TimeLimitError
    from planner.whatif.montecarlo import ScenarioFile

    spec = ScenarioFile.model_validate({"scenarios": [{"name": "more", "set": {"inference.chat.requests_per_s": 25}}]})
    with pytest.raises(TimeLimitError):
        two_stage.plan_under_uncertainty(load_problem(str(ROOT / "problems" / "startup.yaml")), spec, None, 1e-6)


def test_a_scenario_that_cannot_buy_a_part_rules_out_purchases_with_it() -> None:
    """One future sells no L40S: a purchase with L40S servers cannot have been made in it, so the
    plan buys what every scenario sells (no traceback, no L40S in the purchase)."""
    from planner.catalog import load_catalog
    from planner.whatif.montecarlo import ScenarioFile

    keep = {"L40S", "H100-PCIe"}
    others = [g for g in load_catalog().gpus if g not in keep]
    base = loads_problem(PROBLEM.replace(ONLY_L40S, ", ".join(others)), "u.yaml")
    spec = ScenarioFile.model_validate(
        {
            "scenarios": [
                {"name": "as-is", "set": {"inference.chat.requests_per_s": 60}},
                {"name": "no-l40s", "set": {"catalog.exclude": [*others, "L40S"]}},
            ]
        }
    )
    plan = two_stage.plan_under_uncertainty(base, spec)
    st = plan.stochastic
    assert st is not None and st["servable"] == 2
    assert st["servers"] and all(r["gpu"] != "L40S" for r in st["servers"])
    assert all(row["tco_usd"] is not None for row in st["per_scenario"])
    assert plan.verification == []
