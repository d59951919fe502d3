"""How much of a large fleet's gap is whole servers: the planner's own model against the same
model with servers bought by the GPU; and, with ``--parts``, where the plan pays above its floors.

    python benchmarks/gap_probe.py [--seed 7] [--only-types A,B,...] [--no-jobs] [--time-limit 60]
                                   [--parts] [--save FOLDER]

Runs the planner on the generated problem (as ``bench_large.py``, with its variants), keeps the
model of its search's last phase (with its start and its solver settings), then solves, each from
that start and with those settings at the same deterministic limit:

- the model as the planner built it;
- the same model with every pool's servers counted in GPUs (``servers = gpus / gpus_per_server``,
  each row scaled so its coefficients stay whole, each server's price divided by its GPUs and
  rounded down). That is a relaxation: every plan of the first model is one of it, at a cost no
  higher. Its plan and bound say what whole servers cost and whether the bound sees them.

``--parts`` splits the plan and the bound into the two floors' parts (the services and GPU-type
charges of ``services:type_set_floor``, the jobs of ``jobs:floor``: each part's left-hand side in the
plan against its right-hand side) and the rest (racks, network, front-end, storage: the plan's cost
beyond both left-hand sides, the bound beyond both right-hand sides). It then solves the relaxed
model with every service fixed at its mix of the type-set floor, whose services part is the floor
itself: what the jobs and the rest then cost, with no whole server, says what the floors' own mixes
leave for the others.
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


def _solved(text: str, params: str, limit: float) -> tuple[Any, Any, int]:
    """The model (text format) solved with those settings at that limit: (model, solver, status)."""
    from ortools.sat.python import cp_model

    model = cp_model.CpModel()
    model.proto.parse_text_format(text)
    solver = cp_model.CpSolver()
    solver.parameters.parse_text_format(params)
    solver.parameters.max_deterministic_time = limit
    return model, solver, solver.solve(model)


def _solve(text: str, params: str, limit: float) -> str:
    t0 = time.perf_counter()
    _, solver, code = _solved(text, params, limit)
    obj, bound = solver.objective_value, solver.best_objective_bound
    gap = (obj - bound) / obj if obj else float("nan")
    return (
        f"{solver.status_name(code).lower():9s} plan ${obj:,.0f}  bound ${bound:,.0f}  gap {gap:.2%}  "
        f"({solver.deterministic_time:.1f} det. s, {time.perf_counter() - t0:.0f} s)"
    )


def _parts(text: str, values: dict[int, int] | None = None) -> dict[str, tuple[int, int]]:
    """Per part, (its cost in the plan, its floor): the plan is the model's hint, or ``values``."""
    from google.protobuf import text_format
    from ortools.sat import cp_model_pb2

    proto = text_format.Parse(text, cp_model_pb2.CpModelProto())
    plan = (
        values if values is not None else dict(zip(proto.solution_hint.vars, proto.solution_hint.values, strict=True))
    )
    total = sum(a * plan.get(v, 0) for v, a in zip(proto.objective.vars, proto.objective.coeffs, strict=True))
    parts: dict[str, tuple[int, int]] = {}
    for c in proto.constraints:
        if c.name in ("services:type_set_floor", "jobs:floor"):
            lhs = sum(a * plan.get(v, 0) for v, a in zip(c.linear.vars, c.linear.coeffs, strict=True))
            parts[c.name] = (int(lhs), int(c.linear.domain[0]))
    parts["the rest"] = (int(total) - sum(lhs for lhs, _ in parts.values()), 0)
    return parts


def _fixed(text: str, replicas: dict[str, int]) -> str:
    """The model with every named replica count fixed, and no hint."""
    from google.protobuf import text_format
    from ortools.sat import cp_model_pb2

    proto = text_format.Parse(text, cp_model_pb2.CpModelProto())
    for v in proto.variables:
        if v.name in replicas:
            v.ClearField("domain")
            v.domain.extend([replicas[v.name], replicas[v.name]])
    proto.ClearField("solution_hint")
    return str(text_format.MessageToString(proto))


def _solved_values(text: str, params: str, limit: float) -> tuple[str, dict[int, int]]:
    from ortools.sat.python import cp_model

    model, solver, code = _solved(text, params, limit)
    found = code in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    values = {i: int(solver.value(model.get_int_var_from_proto_index(i))) for i in range(len(model.proto.variables))}
    status = f"{solver.status_name(code).lower()} plan ${solver.objective_value:,.0f}" if found else "no plan"
    return status, values if found else {}


def _print_parts(title: str, parts: dict[str, tuple[int, int]], bound: float | None = None) -> None:
    print(f"  {title}")
    for name, (cost, floor) in parts.items():
        print(
            f"    {name:25s} ${cost:>12,}" + (f"   floor ${floor:>12,}   above it ${cost - floor:>9,}" if floor else "")
        )
    if bound is not None:
        rest = bound - sum(floor for _, floor in parts.values())
        print(f"    the bound's rest          ${rest:>12,.0f}   (the bound ${bound:,.0f} beyond both floors)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    fleet_arguments(ap)
    ap.add_argument("--time-limit", type=float, default=60.0, help="deterministic seconds of each probe solve")
    ap.add_argument("--save", type=Path, help="also write the captured model and its solver settings to this folder")
    ap.add_argument("--parts", action="store_true", help="split the plan into its floors' parts (see above)")
    args = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[attr-defined]

    import os
    import tempfile

    import planner.optimize.solve as solve_module
    import planner.pipeline as pipeline
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

    built: list[object] = []
    build = pipeline.build

    def keep_built(*a, **k):  # type: ignore[no-untyped-def]
        built.append(build(*a, **k))
        return built[-1]

    solve_module._search = spy  # type: ignore[assignment]
    pipeline.build = keep_built  # type: ignore[assignment]
    ctx = prepare(loaded)
    plan = plan_context(ctx, None)
    sizes = {chassis: spec.gpus_per_server for chassis, spec in ctx.catalog.servers.items()}
    solve_module._search = search  # type: ignore[assignment]
    pipeline.build = build  # type: ignore[assignment]
    print(f"planner: {plan.status}, TCO ${plan.tco_usd:,.0f}, gap {plan.gap:.2%}")
    text, params = str(kept["text"]), str(kept["params"])
    if args.save:
        args.save.mkdir(parents=True, exist_ok=True)
        (args.save / "model.pb.txt").write_text(text)
        (args.save / "params.pb.txt").write_text(params)
        (args.save / "sizes.txt").write_text("".join(f"{c} {n}\n" for c, n in sizes.items()))
    if args.parts:
        _print_parts("the plan, by part", _parts(text), plan.tco_usd * (1 - plan.gap) if plan.gap is not None else None)
        b = built[0]
        type_set = b.type_set  # type: ignore[attr-defined]
        if type_set is None:
            raise SystemExit("no type-set floor in this model: nothing to fix the services at")
        replicas = {
            r.name: n
            for name, counts in type_set.mixes.items()
            for (_, r), n in zip(b.floors[name].reps, counts, strict=True)  # type: ignore[attr-defined]
        }
        relaxed = _fixed(_by_the_gpu(text, sizes), replicas)
        status, values = _solved_values(relaxed, params, args.time_limit)
        print(f"  by the GPU, the services at the type-set floor's mixes ({sorted(type_set.types)}): {status}")
        if values:
            _print_parts("that plan, by part", _parts(relaxed, values))
        return
    print(f"its last phase's model: {kept['size']} variables; each below from its start, {args.time_limit:g} det. s")
    print(f"  whole servers (the planner's model):  {_solve(text, params, args.time_limit)}")
    print(f"  servers bought by the GPU (relaxed):   {_solve(_by_the_gpu(text, sizes), params, args.time_limit)}")


if __name__ == "__main__":
    main()
