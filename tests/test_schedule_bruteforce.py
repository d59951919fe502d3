"""The schedule against a brute force: for the job sizes the planner chose, no schedule fits
in one server fewer (every job order through a serial schedule-generation scheme, which
reaches every active schedule, and a feasible schedule can always be left-shifted to one)."""

from __future__ import annotations

import itertools

import pytest

from planner.catalog import load_catalog
from tests.conftest import solve_text


def _problem(jobs: list[tuple[str, float, float, float, list[str]]]) -> str:
    exclude = ", ".join(g for g in load_catalog().gpus if g != "L40S")
    text = f"name: sched\ncatalog:\n  exclude: [{exclude}]\ntraining:\n"
    for name, tokens, release, deadline, after in jobs:
        text += (
            f"  - {{name: {name}, model: {{params_b: 1.0}}, tokens: {tokens}, release_day: {release}, "
            f"deadline_days: {deadline}, after: [{', '.join(after)}]}}\n"
        )
    return text


def _fits(jobs, capacity: int) -> bool:  # type: ignore[no-untyped-def]
    """Some job order places every job, each at its earliest start with GPUs free, by its deadline."""
    names = [j["name"] for j in jobs]
    for order in itertools.permutations(names):
        placed: dict[str, tuple[float, float, int]] = {}
        ok = True
        for name in order:
            job = next(j for j in jobs if j["name"] == name)
            if any(d not in placed for d in job["after"]):
                ok = False
                break
            earliest = max([job["release"], *(placed[d][1] for d in job["after"])])
            candidates = sorted({earliest, *(e for _, e, _ in placed.values() if e >= earliest)})
            for t in candidates:
                end = t + job["days"]
                points = [t] + [s for s, _, _ in placed.values() if t < s < end]
                if all(sum(g for s, e, g in placed.values() if s <= p < e) + job["gpus"] <= capacity for p in points):
                    placed[name] = (t, end, job["gpus"])
                    break
            if name not in placed or placed[name][1] > job["deadline"] + 1e-9:
                ok = False
                break
        if ok:
            return True
    return False


CASES = [
    [("a", 8e10, 0, 12, []), ("b", 8e10, 0, 24, []), ("c", 4e10, 5, 30, ["a"])],
    # tokens sized so that, at the interruption model's goodput (~0.99 here), the plan is the one
    # these jobs had at the former fixed goodput of 0.85: all three on one eth-100g pool
    [("a", 1.4e11, 0, 20, []), ("b", 4.6e10, 3, 12, []), ("c", 4.6e10, 0, 25, [])],
]


@pytest.mark.parametrize("jobs", CASES)
def test_no_schedule_fits_one_server_fewer(jobs):
    plan = solve_text(_problem(jobs))
    assert plan.status == "optimal" and plan.verification == []
    pools = {(t.server, t.fabric) for t in plan.training}
    assert len(pools) == 1  # one pool: its size is the whole question
    per_server = load_catalog().servers[plan.training[0].server].gpus_per_server
    bought = sum(r.count for r in plan.servers) * per_server
    rows = [
        {
            "name": t.name,
            "days": round(t.end_day - t.start_day, 6),
            "gpus": t.held_gpus,  # hot spares are held beside the job
            "release": spec[2],
            "deadline": spec[3],
            "after": spec[4],
        }
        for t, spec in zip(plan.training, jobs, strict=True)
    ]
    assert bought > per_server  # a real question: more than one server
    assert _fits(rows, bought)
    assert not _fits(rows, bought - per_server)
