"""How much of a large fleet's gap is whole servers: the planner's own model against the same
model with servers bought by the GPU.

    python benchmarks/gap_probe.py [--seed 7] [--only-types A,B,...] [--no-jobs] [--time-limit 60]

Runs the planner on the generated problem (as ``bench_large.py``, with its variants), keeps the
model of its search's last phase (with its start and its solver settings), then solves, each from
that start and with those settings at the same deterministic limit:

- the model as the planner built it;
- the same model with every pool's servers counted in GPUs (``servers = gpus / gpus_per_server``,
  each row scaled so its coefficients stay whole, each server's price divided by its GPUs and
  rounded down). That is a relaxation: every plan of the first model is one of it, at a cost no
  higher. Its plan and bound say what whole servers cost and whether the bound sees them.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_large import fleet, fleet_arguments


def _by_the_gpu(text: str, gpus_per_server: dict[str, int]) -> str:
    """The model (text format) with each pool's server count replaced by its GPUs
    (``gpus_per_server`` by chassis id: a pool's variable is ``servers[chassis/gpu/fabric]``)."""
    from google.protobuf import text_format
    from ortools.sat import cp_model_pb2

    proto = text_format.Parse(text, cp_model_pb2.CpModelProto())
    size = {}
    for i, v in enumerate(proto.variables):
        if v.name.startswith("servers["):
            size[i] = gpus_per_server[v.name.removeprefix("servers[").split("/")[0]]
    scale = math.lcm(*size.values())
    for i, g in size.items():
        domain = list(proto.variables[i].domain)
        proto.variables[i].ClearField("domain")
        proto.variables[i].domain.extend([d * g for d in domain])
    for c in proto.constraints:
        kind = c.WhichOneof("constraint")
        if kind != "linear":
            if any((v if v >= 0 else -v - 1) in size for v in _variables(c)):
                raise SystemExit(f"a {kind} constraint holds a server count: not relaxed by this probe")
            continue
        if not any(v in size for v in c.linear.vars):
            continue
        coeffs = [
            a * scale // size[v] if v in size else a * scale
            for v, a in zip(c.linear.vars, c.linear.coeffs, strict=True)
        ]
        domain = [d * scale if abs(d) < (1 << 60) // scale else d for d in c.linear.domain]
        c.linear.ClearField("coeffs")
        c.linear.coeffs.extend(coeffs)
        c.linear.ClearField("domain")
        c.linear.domain.extend(domain)
    costs = [
        a // size[v] if v in size else a for v, a in zip(proto.objective.vars, proto.objective.coeffs, strict=True)
    ]
    proto.objective.ClearField("coeffs")
    proto.objective.coeffs.extend(costs)
    proto.objective.ClearField("domain")  # a window on the old costs would cut the relaxation
    hint = [
        x * size[v] if v in size else x
        for v, x in zip(proto.solution_hint.vars, proto.solution_hint.values, strict=True)
    ]
    proto.solution_hint.ClearField("values")
    proto.solution_hint.values.extend(hint)
    return str(text_format.MessageToString(proto))


def _variables(message: Any) -> list[int]:
    """Every variable index a constraint names, in any of its expressions."""
    from google.protobuf.message import Message

    found: list[int] = []
    for field, value in message.ListFields():
        if field.name in ("vars", "literals", "enforcement_literal"):
            found.extend(value)
        elif field.message_type is not None:
            for part in [value] if isinstance(value, Message) else value:
                found.extend(_variables(part))
    return found


def _solve(text: str, params: str, limit: float) -> str:
    from ortools.sat.python import cp_model

    model = cp_model.CpModel()
    model.proto.parse_text_format(text)
    solver = cp_model.CpSolver()
    solver.parameters.parse_text_format(params)
    solver.parameters.max_deterministic_time = limit
    t0 = time.perf_counter()
    code = solver.solve(model)
    obj, bound = solver.objective_value, solver.best_objective_bound
    gap = (obj - bound) / obj if obj else float("nan")
    return (
        f"{solver.status_name(code).lower():9s} plan ${obj:,.0f}  bound ${bound:,.0f}  gap {gap:.2%}  "
        f"({solver.deterministic_time:.1f} det. s, {time.perf_counter() - t0:.0f} s)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    fleet_arguments(ap)
    ap.add_argument("--time-limit", type=float, default=60.0, help="deterministic seconds of each probe solve")
    args = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[attr-defined]

    import os
    import tempfile

    import planner.optimize.solve as solve_module
    from planner.pipeline import plan_context, prepare

    loaded = fleet(args)
    kept: dict[str, object] = {}
    search = solve_module._search

    def spy(solver, model, workers):  # type: ignore[no-untyped-def]
        if workers > 1:  # the search's last phase is its last multi-worker solve (tie-breaks take one)
            with tempfile.TemporaryDirectory() as folder:
                path = os.path.join(folder, "model.pb.txt")
                model.export_to_file(path)
                kept.update(size=len(model.proto.variables), text=Path(path).read_text(), params=str(solver.parameters))
        return search(solver, model, workers)

    solve_module._search = spy  # type: ignore[assignment]
    ctx = prepare(loaded)
    plan = plan_context(ctx, None)
    sizes = {chassis: spec.gpus_per_server for chassis, spec in ctx.catalog.servers.items()}
    solve_module._search = search  # type: ignore[assignment]
    print(f"planner: {plan.status}, TCO ${plan.tco_usd:,.0f}, gap {plan.gap:.2%}")
    text, params = str(kept["text"]), str(kept["params"])
    print(f"its last phase's model: {kept['size']} variables; each below from its start, {args.time_limit:g} det. s")
    print(f"  whole servers (the planner's model):  {_solve(text, params, args.time_limit)}")
    print(f"  servers bought by the GPU (relaxed):   {_solve(_by_the_gpu(text, sizes), params, args.time_limit)}")


if __name__ == "__main__":
    main()
