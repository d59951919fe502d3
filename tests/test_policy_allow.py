"""Parts marked for what they are: by default a plan buys current data-centre parts only;
end-of-life, announced, workstation, consumer and edge parts only when the problem opts in;
`catalog.exclude` takes GPU ids, chassis ids and classes; the plan says what a buyer should
know about the parts it chose."""

from __future__ import annotations

import textwrap

import pytest

from planner.catalog import load_catalog
from planner.errors import InputError
from planner.io.problem_io import loads_problem
from planner.pipeline import plan_problem
from planner.schema.plan import Plan

SMALL = """
name: small-service
{policy}
catalog:
  exclude: [{exclude}]
inference:
  - name: chat
    model: llama-3.1-8b
    precisions: [fp8, int4, bf16]
    requests_per_s: {rps}
    ttft_ms: 2000
    tpot_ms: 80
"""


def _solve(rps: float, policy: str = "", exclude: str = "") -> Plan:
    text = textwrap.dedent(SMALL.format(policy=policy, exclude=exclude, rps=rps))
    return plan_problem(loads_problem(text, "small.yaml"))


def _parts(plan: Plan) -> list[tuple[str, str]]:
    catalog = load_catalog()
    out = []
    for row in plan.servers:
        g, s = catalog.gpus[row.gpu], catalog.servers[row.server]
        out += [(g.lifecycle, g.deployment_class), (s.lifecycle, s.deployment_class)]
    return out


@pytest.mark.parametrize("rps", [1, 4, 15, 60])
def test_by_default_only_current_data_centre_parts(rps: float) -> None:
    plan = _solve(rps)
    assert plan.status == "optimal" and plan.verification == []
    assert set(_parts(plan)) == {("current", "datacenter")}


def test_opting_in_lets_cheaper_consumer_or_end_of_life_cards_win() -> None:
    """The same small service is cheaper once GeForce and end-of-life cards may be bought:
    the default plan leaves them out on purpose, not because they cannot serve."""
    default = _solve(1)
    opened = _solve(1, policy="policy:\n  allow: [consumer, end-of-life, workstation]")
    assert opened.tco_usd < default.tco_usd
    assert set(_parts(opened)) - {("current", "datacenter")}  # it chose one of the opted-in parts
    notes = " ".join(a.message for a in opened.advice)
    if any(life == "end-of-life" for life, _ in _parts(opened)):
        assert "end-of-life" in notes


def test_exclude_takes_classes_and_chassis() -> None:
    opened = "policy:\n  allow: [consumer, end-of-life, workstation]"
    no_consumer = _solve(1, policy=opened, exclude="consumer, workstation")
    assert all(cls not in ("consumer", "workstation") for _, cls in _parts(no_consumer))
    chassis = {r.server for r in no_consumer.servers}
    again = _solve(1, policy=opened, exclude="consumer, workstation, " + ", ".join(sorted(chassis)))
    assert not {r.server for r in again.servers} & chassis
    assert again.tco_usd >= no_consumer.tco_usd


def test_an_unknown_exclude_name_is_an_input_error() -> None:
    from planner.context import prepare

    with pytest.raises(InputError) as err:
        prepare(loads_problem(textwrap.dedent(SMALL.format(policy="", exclude="consumr", rps=1)), "small.yaml"))
    assert "consumr" in str(err.value) and "consumer" in (err.value.hint or "")


def test_the_plan_notes_an_uncalibrated_part() -> None:
    """MI355X's generation has no fitted measurements yet: a plan that buys it says so."""
    catalog = load_catalog()
    keep = ["MI355X"]
    plan = _solve(30, exclude=", ".join(g for g in catalog.gpus if g not in keep))
    assert plan.gpus and set(plan.gpus) == {"MI355X"}
    assert any("MI355X" in a.message and "not yet calibrated" in a.message for a in plan.advice)
