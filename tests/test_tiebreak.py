"""Ties between equal-TCO plans are broken the same way every time: TCO, then fewer
GPU types, then less IT power, then training jobs as early as they may start."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from ortools.sat.python import cp_model

from planner.bom import PoolKey, pool_spec
from planner.catalog import load_catalog
from planner.io.problem_io import load_problem
from planner.optimize import tiebreak
from planner.optimize.built import Built, PoolVars
from planner.optimize.model import build, gpu_type_flags
from planner.optimize.solve import Solved, _run, solve
from planner.optimize.tiebreak import Level, break_ties, solve_built, stages
from planner.pipeline import assemble_plan, prepare
from planner.verify import verify

PROBLEMS = Path(__file__).resolve().parent.parent / "problems"

# Three pools, two GPU types; every server costs the same, two servers are needed.
#   A1 (L40S, 100 W, at most 1)  A2 (L40S, 400 W)  B (L4, 150 W)
# Equal-TCO plans: A1+B (two types, 250 W), A1+A2 (one type, 500 W), B+B (one type, 300 W).
A1 = PoolKey("pcie-8gpu-4u", "L40S", "none")
A2 = PoolKey("pcie-4gpu-2u", "L40S", "none")
B = PoolKey("pcie-4gpu-2u", "L4", "none")


def _tiny(job_window: tuple[int, int] | None = None) -> Built:
    catalog = load_catalog()
    m = cp_model.CpModel()
    b = Built(m)
    for key, most in ((A1, 1), (A2, 3), (B, 3)):
        n = m.new_int_var(0, most, f"servers[{key.label()}]")
        r = m.new_int_var(0, most, f"racks[{key.label()}]")
        m.add(r >= n)
        b.pools[key] = PoolVars(pool_spec(catalog, key), n, r, 1)
    servers = {k: p.servers for k, p in b.pools.items()}
    m.add(sum(servers.values()) >= 2)
    gpu_type_flags(b)  # one literal per GPU type, as the model builder makes them
    b.gpu_vendor = {gpu: catalog.gpus[gpu].vendor for gpu in b.gpu_type_used}
    b.it_power_w = 100 * servers[A1] + 400 * servers[A2] + 150 * servers[B]
    b.tco = 10 * sum(servers.values()) + 3 * sum(p.racks for p in b.pools.values())
    if job_window is not None:
        b.starts["job"] = m.new_int_var(*job_window, "start[job]")
    m.minimize(b.tco)
    return b


def _first_at(b: Built, pins: dict[PoolKey, int]) -> Solved:
    """A first solve that lands on a given plan (solved on a copy: same variable indices)."""
    pinned = b.model.clone()
    for key, n in pins.items():
        pinned.add(b.pools[key].servers == n)
    first = _run(pinned, 10.0, 1)
    assert first.status == "optimal"
    return first


def _plan(s: Solved, b: Built) -> dict[PoolKey, int]:
    return {k: s.value(p.servers) for k, p in b.pools.items() if s.value(p.servers)}


@pytest.mark.parametrize("start", [{A1: 1, B: 1}, {A1: 1, A2: 1}, {B: 2}])
def test_fewer_gpu_types_then_less_power(start):
    b = _tiny()
    first = _first_at(b, start)
    assert first.objective == 26  # every start is a tie at the optimum
    tied = break_ties(b, first)
    # A1+B draws the least power but buys two types; of the one-type plans B+B draws less.
    assert _plan(tied, b) == {B: 2}
    assert tied.objective == first.objective == tied.value(b.tco)
    assert tied.value(b.it_power_w) == 300


def test_staged_levels_agree_with_one_weighted_objective(monkeypatch):
    b = _tiny(job_window=(500, 3000))
    one = break_ties(b, _first_at(b, {A1: 1, B: 1}))
    assert len(stages(tiebreak.tie_levels(b, b.model.clone(), one))) == 1
    monkeypatch.setattr(tiebreak, "SAFE_RANGE", 100)  # forces one stage per level
    assert len(stages(tiebreak.tie_levels(b, b.model.clone(), one))) == 3
    staged = break_ties(b, _first_at(b, {A1: 1, B: 1}))
    assert _plan(staged, b) == _plan(one, b) == {B: 2}
    assert staged.value(b.starts["job"]) == one.value(b.starts["job"]) == 500


def test_free_start_moves_to_its_release():
    b = _tiny(job_window=(500, 3000))
    pinned = b.model.clone()
    pinned.add(b.starts["job"] == 2000)
    first = _run(pinned, 10.0, 1)
    assert first.value(b.starts["job"]) == 2000
    assert break_ties(b, first).value(b.starts["job"]) == 500


def test_weights_dominate_and_fit_int64():
    levels = [Level("types", 0, 0, 25), Level("power", 0, 0, 22_851_661), Level("starts", 0, 0, 219_000)]
    (group,) = stages(levels)
    (w_types, _), (w_power, _), (w_starts, _) = group
    assert w_starts == 1
    assert w_power > 219_000 * w_starts  # one watt outweighs every start-time change
    assert w_types > 22_851_661 * w_power + 219_000 * w_starts  # one GPU type outweighs everything below
    assert sum(w * lv.hi for w, lv in group) < 2**53 < 2**63
    # A level that cannot vary gets no weight; ranges too wide for one stage are split.
    assert [[lv.name for _, lv in g] for g in stages([Level("fixed", 0, 3, 3), *levels])] == [
        ["types", "power", "starts"]
    ]
    huge = [Level("a", 0, 0, 2**30), Level("b", 0, 0, 2**30)]
    assert [[lv.name for _, lv in g] for g in stages(huge)] == [["a"], ["b"]]


def test_without_a_plan_the_first_result_is_returned():
    b = _tiny()
    b.model.add(sum(p.servers for p in b.pools.values()) >= 100)
    first = solve(b.model)
    assert first.status == "infeasible"
    assert break_ties(b, first) is first


def test_a_re_solve_that_finds_nothing_keeps_the_first_plan(monkeypatch):
    b = _tiny()
    first = _first_at(b, {A1: 1, B: 1})
    nothing = Solved("unknown", cp_model.CpSolver(), 0.0, 0.0, 0.0)
    monkeypatch.setattr(tiebreak, "_run", lambda *a, **k: nothing)
    kept = break_ties(b, first)
    assert kept.solver is first.solver and _plan(kept, b) == {A1: 1, B: 1}
    assert (kept.status, kept.objective, kept.bound) == (first.status, first.objective, first.bound)


def _lab() -> tuple[Built, Solved, Solved]:
    ctx = prepare(load_problem(PROBLEMS / "lab-train-and-serve.yaml"))
    b = build(ctx.problem, ctx.catalog, ctx.workloads)
    first = solve(b.model)
    return b, first, break_ties(b, first)


def test_tco_bound_and_gap_are_the_first_solve_s():
    b, first, tied = _lab()
    assert first.status == tied.status == "optimal"
    assert tied.objective == first.objective == tied.value(b.tco)
    assert (tied.bound, tied.gap) == (first.bound, first.gap)
    assert tied.seconds >= first.seconds


def test_values_from_the_copy_s_solver_satisfy_the_original_model():
    """The re-solve ran on a clone; its solver answers for the original variables by index."""
    b, _, tied = _lab()
    check = b.model.clone()
    n = len(b.model.proto.variables)
    for i in range(n):
        var = b.model.get_int_var_from_proto_index(i)
        assert tied.solver.value(var) == tied.solver.value(check.get_int_var_from_proto_index(i))
        check.add(check.get_int_var_from_proto_index(i) == tied.value(var))
    again = _run(check, 10.0, 1)
    assert again.status == "optimal" and again.objective == tied.objective


def test_deterministic():
    b1, _, t1 = _lab()
    b2, _, t2 = _lab()
    n = len(b1.model.proto.variables)
    assert n == len(b2.model.proto.variables)
    values = [
        [t.value(m.get_int_var_from_proto_index(i)) for i in range(n)] for t, m in ((t1, b1.model), (t2, b2.model))
    ]
    assert values[0] == values[1]


def test_a_job_with_slack_starts_at_its_release_day():
    """startup.yaml: pretrain-3b (released on day 0) has about two days of slack before its
    deadline, and the TCO solve alone started it on day 1.84; finetune-70b comes after it."""
    ctx = prepare(load_problem(PROBLEMS / "startup.yaml"))
    b = build(ctx.problem, ctx.catalog, ctx.workloads)
    plan = assemble_plan(ctx, b, solve_built(b))
    assert verify(ctx.problem, ctx.catalog, plan) == []
    jobs = {t.name: t for t in plan.training}
    assert jobs["pretrain-3b"].start_day == 0
    assert jobs["finetune-70b"].start_day == jobs["pretrain-3b"].end_day


@pytest.mark.parametrize(("start", "solves"), [({B: 2}, 2), ({A1: 1, A2: 1}, 2), ({A1: 1, B: 1}, 3)])
def test_a_first_plan_best_on_the_levels_above_skips_the_tco_stage(monkeypatch, start, solves):
    """With a simplicity tolerance the least TCO is a stage of its own; when the proven first
    plan is also best on every stage before it, it is that stage's optimum and no solve is
    made. Against every plan of the tiny model: fewest types, then TCO, then power."""
    b = _tiny()
    b.simplicity_tolerance = 0.5  # plans up to 39 (three servers) may buy fewer types
    first = _first_at(b, start)
    runs: list[int] = []
    real_run = tiebreak._run

    def counted(model, *args, **kwargs):  # type: ignore[no-untyped-def]
        runs.append(1)
        # every stage starts from a complete hint inside the domains (the first plan's solver
        # knows nothing of the variables the tie-breaks add: the hint must not come from it)
        hint = dict(zip(model.proto.solution_hint.vars, model.proto.solution_hint.values, strict=True))
        for i, var in enumerate(model.proto.variables):
            low, high = var.domain[0], var.domain[len(var.domain) - 1]  # (no negative index here)
            assert low <= hint[i] <= high, (var.name, hint[i])
        return real_run(model, *args, **kwargs)

    monkeypatch.setattr(tiebreak, "_run", counted)
    tied = break_ties(b, first)
    plans = [
        (int(a1 + a2 > 0) + int(bb > 0), 13 * (a1 + a2 + bb), 100 * a1 + 400 * a2 + 150 * bb, (a1, a2, bb))
        for a1 in range(2)
        for a2 in range(4)
        for bb in range(4)
        if 2 <= a1 + a2 + bb <= 3
    ]
    *_, (a1, a2, bb) = min(plans)
    assert _plan(tied, b) == {k: n for k, n in ((A1, a1), (A2, a2), (B, bb)) if n}
    assert len(runs) == solves


def test_one_vendor_and_one_type_where_every_plan_owns_gpus_needs_no_stage_solve(monkeypatch):
    """Startup's first plan buys one GPU type of one vendor and its workloads can only run on
    owned GPUs: no plan has fewer, so that stage is not solved. Every value of the plan is the
    one solving the stage gives, with one solve fewer."""
    ctx = prepare(load_problem(PROBLEMS / "startup.yaml"))
    b = build(ctx.problem, ctx.catalog, ctx.workloads)
    first = solve(b.model)
    assert sum(first.value(f) for f in b.gpu_type_used.values()) == 1
    runs: list[int] = []
    real_run = tiebreak._run

    def counted(model, *args, **kwargs):  # type: ignore[no-untyped-def]
        runs.append(1)
        return real_run(model, *args, **kwargs)

    monkeypatch.setattr(tiebreak, "_run", counted)
    skipped = break_ties(b, first)
    n_skipped = len(runs)
    monkeypatch.setattr(tiebreak, "_fewest_possible", lambda *args: False)
    solved = break_ties(b, first)
    assert n_skipped == len(runs) - n_skipped - 1  # one stage solve fewer
    n = len(b.model.proto.variables)
    values = [[t.value(b.model.get_int_var_from_proto_index(i)) for i in range(n)] for t in (skipped, solved)]
    assert values[0] == values[1]
    assert skipped.ties_proven == solved.ties_proven


def test_a_problem_that_may_rent_everything_keeps_the_stage():
    """With a cloud option for every workload a plan may own no GPU at all: one type is then not
    the least possible, and the stage is solved."""
    ctx = prepare(load_problem(PROBLEMS / "startup.yaml"))
    b = build(ctx.problem, ctx.catalog, ctx.workloads)
    at = {"vendors": 1, "gpu_types": 1}
    assert tiebreak._fewest_possible(b, at)
    for xs in b.train.values():
        xs[:] = [(replace(o, rent_usd_per_gpu_hour=2.0), x) for o, x in xs]
    for rs in b.serve.values():
        rs[:] = [(replace(o, rent_usd_per_gpu_hour=2.0), r) for o, r in rs]
    assert not tiebreak._fewest_possible(b, at)
    assert not tiebreak._fewest_possible(b, {"vendors": 1, "gpu_types": 2})
