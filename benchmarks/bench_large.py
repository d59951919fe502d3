"""Solve the generated large problem and say where the time goes.

    python benchmarks/bench_large.py [--seed 7] [--problem FILE] [--time-limit S]
                                     [--log] [--sweep]

Prints the time to enumerate options, to build the CP-SAT model, to solve it
(the planner's own solver settings), the status and gap, and the total wall
time of the planner's pipeline (options, build, solve, read-back, verify).
Goal: proven optimal (gap 0) within 60 s on 2 cores.

Profiling aids:
  --log     the CP-SAT search log of the planner's solve settings (presolve,
            bounds, which subsolver closed the gap)
  --sweep   the same built model under a few solver settings, each with the
            same deterministic-time limit, to compare wall time and proof

Variants of the problem and of the solve, to find where a gap is:
  --services N --jobs N   generate a fleet of another size (seed as given)
  --only-types A,B,...    exclude every other GPU type of the catalog
  --no-jobs               drop the training jobs (services only)
  --cut-level N           CP-SAT's cut effort for this run's solves (the planner's is
                          ``solve.CUT_LEVEL``; the services' floors keep theirs)
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

# Rows of --sweep: (label, workers passed to the planner's solve(), extra CP-SAT parameters).
# Extra parameters go on top of the planner's own settings, as captured from its solve.
SWEEP: list[tuple[str, int, dict[str, object]]] = [
    ("planner settings, 1 worker (the default)", 1, {}),
    ("planner settings, 2 workers interleaved", 2, {}),
    ("planner settings, 4 workers interleaved", 4, {}),
    ("1 worker, stop at 1% relative gap", 1, {"relative_gap_limit": 0.01}),
    ("8 free-running workers (not deterministic; wall cap 3x limit)", 8, {"interleave_search": False}),
]


KINDS = ("linear", "exactly_one", "at_most_one", "bool_or", "bool_and", "cumulative", "interval", "lin_max")


def _kind(c) -> str:  # type: ignore[no-untyped-def]
    return next((k for k in KINDS if getattr(c, f"has_{k}")()), "other")


def _sizes(model) -> dict[str, object]:  # type: ignore[no-untyped-def]
    import os
    import tempfile

    proto = model.proto
    kinds = Counter(_kind(c) for c in proto.constraints)
    enforced = sum(1 for c in proto.constraints if len(c.enforcement_literal))
    bools = sum(1 for v in proto.variables if list(v.domain) == [0, 1])
    terms = sum(len(c.linear.vars) for c in proto.constraints if c.has_linear())
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.pb")
        model.export_to_file(path)
        size = os.path.getsize(path)
    return {
        "variables": len(proto.variables),
        "booleans": bools,
        "constraints": len(proto.constraints),
        "enforced": enforced,
        "by kind": dict(kinds.most_common()),
        "linear terms": terms,
        "objective terms": len(proto.objective.vars),
        "proto bytes": size,
    }


def _vary(data: dict[str, object], only_types: str | None, no_jobs: bool) -> None:
    """``--only-types`` and ``--no-jobs`` applied to a problem's data."""
    if only_types is not None:
        from planner.catalog import load_catalog

        keep = {t.strip() for t in only_types.split(",") if t.strip()}
        known = set(load_catalog().gpus)
        if keep - known:
            raise SystemExit(f"--only-types: unknown GPU types {', '.join(sorted(keep - known))}")
        catalog = data.setdefault("catalog", {})
        assert isinstance(catalog, dict)
        catalog["exclude"] = sorted(known - keep)
    if no_jobs:
        data["training"] = []


def fleet_arguments(ap: argparse.ArgumentParser) -> None:
    """The generated fleet and its variants, for the probes beside this benchmark."""
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--only-types", help="comma-separated GPU types: every other one is excluded")
    ap.add_argument("--no-jobs", action="store_true", help="drop the training jobs")


def fleet(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """The fleet ``fleet_arguments`` name, generated (40 services, 15 jobs) and validated."""
    import yaml
    from generate import generate

    from planner.io.problem_io import loads_problem

    data = generate(args.seed, 40, 15)
    _vary(data, args.only_types, args.no_jobs)
    return loads_problem(yaml.safe_dump(data, sort_keys=False, width=120), f"large-s{args.seed}.yaml")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--problem", help="solve this file instead of generating one")
    ap.add_argument(
        "--time-limit",
        type=float,
        default=None,
        help="deterministic seconds, no wall-clock deadline (planner default if unset)",
    )
    ap.add_argument("--log", action="store_true", help="print the CP-SAT log of one extra solve")
    ap.add_argument("--sweep", action="store_true", help="compare solver settings on the built model")
    ap.add_argument("--save", help="also write the generated problem here")
    ap.add_argument("--fill", action="store_true", help="how full each pool of the plan is: services, jobs, idle")
    ap.add_argument("--services", type=int, default=40, help="services to generate")
    ap.add_argument("--jobs", type=int, default=15, help="training jobs to generate")
    ap.add_argument("--only-types", help="comma-separated GPU types: every other one is excluded")
    ap.add_argument("--no-jobs", action="store_true", help="drop the training jobs")
    ap.add_argument("--cut-level", type=int, help="CP-SAT cut_level of this run's solves")
    args = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[attr-defined]

    t_start = time.perf_counter()
    import yaml

    from planner.io.problem_io import load_problem, loads_problem
    from planner.optimize.model import build
    from planner.pipeline import plan_context, prepare

    t_import = time.perf_counter() - t_start
    varied = args.only_types is not None or args.no_jobs
    if args.problem and not varied:
        loaded = load_problem(args.problem)
        t_gen = 0.0
    else:
        from generate import generate

        t0 = time.perf_counter()
        if args.problem:
            data = yaml.safe_load(Path(args.problem).read_text())
        else:
            data = generate(args.seed, args.services, args.jobs)
        _vary(data, args.only_types, args.no_jobs)
        text = yaml.safe_dump(data, sort_keys=False, width=120)
        t_gen = time.perf_counter() - t0
        if args.save:
            Path(args.save).write_text(text)
        loaded = loads_problem(text, args.problem or f"large-s{args.seed}.yaml")
    if args.cut_level is not None:
        import planner.optimize.solve as solve_module

        solve_module.CUT_LEVEL = args.cut_level
    p = loaded.problem
    print(
        f"problem {p.name}: {len(p.inference)} services, {len(p.training)} training jobs, "
        f"{len(p.catalog.exclude)} GPU types excluded"
    )

    # The pipeline as `planner solve` runs it: options, then build + solve + read-back + verify.
    t0 = time.perf_counter()
    ctx = prepare(loaded)
    t_options = time.perf_counter() - t0
    t0 = time.perf_counter()
    if args.time_limit:
        # The goals are in deterministic seconds: a --time-limit on the command line would also set a
        # wall-clock deadline (1.5 x the limit + 10 s) that a loaded 2-core machine reaches first.
        import planner.optimize.solve as solve_module

        solve_module.DEFAULT_DETERMINISTIC_LIMIT = args.time_limit
    plan = plan_context(ctx, None)
    t_plan = time.perf_counter() - t0

    # Build once more on its own, for its time and the model's size.
    t0 = time.perf_counter()
    built = build(ctx.problem, ctx.catalog, ctx.workloads)
    t_build = time.perf_counter() - t0
    sizes = _sizes(built.model)

    n_train = sum(len(w.training) for w in ctx.workloads)
    n_serve = sum(len(w.inference) for w in ctx.workloads)
    print(
        f"options: {n_train} training options, {n_serve} serving options, {len(built.pools)} server pools, "
        f"{len(built.fabrics)} fabrics"
    )
    print(
        f"model:   {sizes['variables']} variables ({sizes['booleans']} Boolean), {sizes['constraints']} constraints "
        f"{sizes['by kind']} ({sizes['enforced']} with enforcement literals), {sizes['linear terms']} linear terms, "
        f"{sizes['objective terms']} objective terms, "
        f"{sizes['proto bytes'] / 1e6:.2f} MB proto"
    )
    print()
    print(f"  {t_import:7.2f} s  imports")
    if t_gen:
        print(f"  {t_gen:7.2f} s  generate (includes its own option checks)")
    print(f"  {t_options:7.2f} s  options (prepare: enumerate every GPU x chassis x fabric x size/precision)")
    print(f"  {t_build:7.2f} s  build CP-SAT model (timed separately; the pipeline builds it once more)")
    print(f"  {plan.solve_seconds or 0:7.2f} s  solve (planner settings)")
    rest = t_plan - (plan.solve_seconds or 0)
    print(f"  {rest:7.2f} s  pipeline minus solve: build, read-back, constraint rows, verify")
    total = t_options + t_plan
    print(f"  {total:7.2f} s  total (options + build + solve + read-back + verify)")
    print()
    print(
        f"status {plan.status}, gap {plan.gap}, TCO ${plan.tco_usd:,.0f}, capex ${plan.capex_usd:,.0f}, "
        f"verification {'ok' if not plan.verification else plan.verification}"
    )
    goal = plan.status == "optimal" and (plan.gap or 0) < 1e-9 and total <= 60
    print(f"goal (proven optimal within 60 s): {'met' if goal else 'NOT met'}")
    if plan.servers:
        kinds = Counter(f"{r.gpu}" for r in plan.servers for _ in range(r.count))
        print("servers bought: " + ", ".join(f"{n} x {g}" for g, n in kinds.most_common()))
    if args.fill:
        _print_fill(plan)

    if args.log or args.sweep:
        from ortools.sat.python import cp_model

        from planner.optimize.solve import solve

        limit = args.time_limit or 60.0
        captured: list[object] = []
        original = cp_model.CpSolver.solve

        def spy(self, model, *rest, **kw):  # type: ignore[no-untyped-def]
            captured.append(self.parameters)
            if args.log and not args.sweep:
                self.parameters.log_search_progress = True
            return original(self, model, *rest, **kw)

        cp_model.CpSolver.solve = spy  # type: ignore[method-assign]
        try:
            if not args.sweep:
                solve(built.model, limit)
                return
            print(f"\nsolver settings on the same model (deterministic limit {limit:g}):")
            for label, workers, extra in SWEEP:
                if not extra:
                    t0 = time.perf_counter()
                    solved = solve(built.model, limit, workers=workers)
                    wall = time.perf_counter() - t0
                    solver, status = solved.solver, solved.status
                    obj, bound = solved.objective, solved.bound
                else:
                    solver = cp_model.CpSolver()
                    solver.parameters.copy_from(captured[0])  # the planner's own settings
                    solver.parameters.num_workers = workers
                    for k, v in extra.items():
                        setattr(solver.parameters, k, v)
                    solver.parameters.max_time_in_seconds = 3 * limit
                    t0 = time.perf_counter()
                    code = original(solver, built.model)
                    wall = time.perf_counter() - t0
                    status = solver.status_name(code).lower()
                    obj, bound = solver.objective_value, solver.best_objective_bound
                gap = (obj - bound) / abs(obj) if obj else float("nan")
                print(
                    f"  {wall:7.2f} s  dtime {solver.deterministic_time:6.2f}  {status:9s} obj {obj:14,.0f}  "
                    f"gap {gap:.2e}  {label}"
                )
        finally:
            cp_model.CpSolver.solve = original  # type: ignore[method-assign]


def _print_fill(plan) -> None:  # type: ignore[no-untyped-def]
    """Per pool of the plan: GPUs bought, held by services' replicas, and the jobs' most at once
    (their GPUs and hot spares over their days); what is left idle is whole-server rounding the bound may not see."""
    from planner.report.gantt import bought_gpus, peak_gpus

    print("\npool fill (GPUs): bought, services, jobs at most at once, idle")
    for key in sorted({(r.server, r.gpu, r.fabric) for r in plan.servers}):
        bought = bought_gpus(plan, key)
        services = sum(
            rep.gpus_per_replica * rep.count
            for svc in plan.inference
            for rep in svc.replicas
            if not rep.rented and (rep.server, rep.gpu, rep.fabric) == key
        )
        jobs = [t for t in plan.training if not t.rented and (t.server, t.gpu, t.fabric) == key]
        peak = peak_gpus(jobs)
        label = "/".join(key)
        print(f"  {label:45s} {bought:5d} {services:5d} {peak:5d} {bought - services - peak:5d}  ({len(jobs)} jobs)")


if __name__ == "__main__":
    main()
