"""The whole bill of materials: every racked server gets front-end and management Ethernet,
every job's dataset and checkpoints get storage. By hand from the catalog's rules."""

from __future__ import annotations

import math

import pytest

from planner.catalog import load_catalog
from planner.io.problem_io import load_problem
from planner.perf.shapes import shape_of
from tests.conftest import PROBLEMS, example_plan

CATALOG = load_catalog()
EXAMPLES = sorted(p.name for p in PROBLEMS.glob("*.yaml") if "infeasible" not in p.name)


def _storage_tb(name: str) -> int:
    problem = load_problem(PROBLEMS / name).problem
    st = CATALOG.storage
    total = 0.0
    for job in problem.training:
        params = shape_of(job.model, CATALOG).params_b * 1e9
        state = params * 14 * 3 if job.method == "full" else params * 2
        total += state + job.tokens * 4
    assert (st.checkpoint_bytes_per_param, st.checkpoints_kept, st.dataset_bytes_per_token) == (14, 3, 4)
    return math.ceil(total / 1e12 - 1e-9) if total else 0


@pytest.mark.parametrize("name", EXAMPLES)
def test_every_server_has_front_end_network_and_every_job_storage(name: str) -> None:
    plan = example_plan(name)
    assert plan.verification == []
    fe = CATALOG.frontend
    racked = sum(r.count for r in plan.servers if CATALOG.servers[r.server].needs_rack)
    tb = _storage_tb(name) if racked else 0  # a desk-side box keeps its data on its own disks
    nodes = math.ceil(tb / CATALOG.storage.tb_per_node) if tb else 0
    links = racked * 2 + nodes * 2
    switches = math.ceil(links / 48)
    mgmt = math.ceil((racked + switches) / 48)
    expected = {"servers": racked, "ports": links, "switches": switches, "mgmt_switches": mgmt, "storage_tb": tb}
    assert plan.frontend == expected
    assert plan.storage_tb == tb
    lines = {p.sku: p for p in plan.purchase}
    if racked:
        assert lines["frontend:switch"].quantity == switches
        assert lines["frontend:cable"].quantity == links
        assert lines["frontend:mgmt-switch"].quantity == mgmt
        assert lines["frontend:switch"].unit_price_usd == round(fe.switch_price.usd)
    if tb:
        assert lines["storage:tb"].quantity == tb and lines["storage:tb"].category == "storage"
        assert plan.tco_breakdown_usd["storage"] >= tb * round(CATALOG.storage.price_usd_per_tb.usd) - 0.01


def test_a_training_problem_stores_its_corpus_and_checkpoints() -> None:
    """8B parameters x 14 B x 3 checkpoints = 0.34 TB, 2.5T tokens x 4 B = 10 TB: 11 TB."""
    assert example_plan("train-then-serve.yaml").storage_tb == 11
