"""``benchmarks/gap_probe.py``'s relaxation: servers bought by the GPU, held against a hand count."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from ortools.sat.python import cp_model

_spec = importlib.util.spec_from_file_location(
    "gap_probe", Path(__file__).resolve().parents[1] / "benchmarks" / "gap_probe.py"
)
assert _spec is not None and _spec.loader is not None
_probe = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_probe)
_by_the_gpu = _probe._by_the_gpu


def _text(model: cp_model.CpModel, tmp_path: Path) -> str:
    path = tmp_path / "model.pb.txt"
    model.export_to_file(str(path))
    return path.read_text()


def _optimum(text: str) -> float:
    model = cp_model.CpModel()
    model.proto.parse_text_format(text)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    assert solver.solve(model) == cp_model.OPTIMAL
    return solver.objective_value


def test_servers_by_the_gpu_pay_for_the_gpus_used_only(tmp_path: Path) -> None:
    """9 GPUs on 8-GPU servers at $800 and 4-GPU servers at $500 (a rack budget of $3,000 holds
    both): whole servers cost $1,300 (one of each); by the GPU, 9 at $100 cost $900."""
    model = cp_model.CpModel()
    big = model.new_int_var(0, 5, "servers[hgx-8gpu/G/none]")
    small = model.new_int_var(0, 5, "servers[pcie-4gpu/G/none]")
    on_big, on_small = model.new_int_var(0, 40, "gpus_big"), model.new_int_var(0, 20, "gpus_small")
    model.add(on_big <= 8 * big)
    model.add(on_small <= 4 * small)
    model.add(on_big + on_small >= 9)
    model.add(800 * big + 500 * small <= 3000).with_name("budget")
    model.minimize(800 * big + 500 * small)
    model.add_hint(big, 2)
    model.add_hint(small, 0)
    text = _text(model, tmp_path)
    sizes = {"hgx-8gpu": 8, "pcie-4gpu": 4}
    assert _optimum(text) == 1300
    relaxed = _by_the_gpu(text, sizes)
    assert _optimum(relaxed) == 900  # 9 GPUs at $100 (8-GPU) or $125 (4-GPU): all on the cheaper
    hinted = cp_model.CpModel()
    hinted.proto.parse_text_format(relaxed)
    assert list(hinted.proto.solution_hint.values) == [16, 0]  # two servers are 16 GPUs


def test_a_server_count_outside_a_linear_row_is_refused(tmp_path: Path) -> None:
    model = cp_model.CpModel()
    servers = model.new_int_var(0, 5, "servers[hgx-8gpu/G/none]")
    other = model.new_int_var(0, 5, "x")
    model.add_max_equality(other, [servers, 2])
    model.minimize(servers)
    try:
        _by_the_gpu(_text(model, tmp_path), {"hgx-8gpu": 8})
    except SystemExit as exc:
        assert "lin_max" in str(exc)
    else:
        raise AssertionError("a lin_max over a server count was relaxed")


def test_the_parts_split_the_plan_at_its_floors(tmp_path: Path) -> None:
    """A plan of $1,000 of services (floor $900), $300 of jobs (floor $250) and a $50 rack: the
    parts are those, and the rest is what neither floor's row holds."""
    model = cp_model.CpModel()
    services = model.new_int_var(0, 2000, "replicas[svc#0@0]")
    jobs = model.new_int_var(0, 2000, "free_gpus[p]")
    rack = model.new_int_var(0, 2, "racks[p]")
    model.add(services >= 900).with_name("services:type_set_floor")
    model.add(jobs >= 250).with_name("jobs:floor")
    model.minimize(services + jobs + 50 * rack)
    model.add_hint(services, 1000)
    model.add_hint(jobs, 300)
    model.add_hint(rack, 1)
    text = _text(model, tmp_path)
    assert _probe._parts(text) == {
        "services:type_set_floor": (1000, 900),
        "jobs:floor": (300, 250),
        "the rest": (50, 0),
    }
    fixed = cp_model.CpModel()
    fixed.proto.parse_text_format(_probe._fixed(text, {"replicas[svc#0@0]": 950}))
    assert list(fixed.proto.variables[0].domain) == [950, 950] and not fixed.proto.solution_hint.vars
    assert _optimum(_probe._fixed(text, {"replicas[svc#0@0]": 950})) == 950 + 250
