"""How long `planner solve problems/startup.yaml` takes, against what no planner can avoid.

The baseline is a bare interpreter that imports the same third-party modules the
planner imports while solving (OR-Tools' CP-SAT pulls in pandas and numpy;
pydantic, typer, rich and yaml are the planner's own). The list is measured, not
assumed: a first run records every non-stdlib module the solve loaded.

Each command runs N times in a fresh process, the commands in turn (round by round); the
medians are compared, and the median of the rounds' ratios is printed beside. The planner's
runs read what earlier runs kept in its cache folder (the catalog's parse and build, the
problem's validation: ``planner.kept``), as a user's second run does; a first run, with an empty
cache folder, is timed too and printed beside (``--no-cold``: not).
Goal: the planner within 2x the baseline. The planner's modules are byte-compiled first,
as an install compiles them (``--no-compile``: as the work tree has them).

    python benchmarks/bench_startup.py [--runs 5] [--problem problems/startup.yaml] [--breakdown]
        [--against DIR] [--no-cold]

``--against DIR``: another checkout of the planner (``git worktree add DIR REV``), run in the same
rounds as this one (each by ``python -c``, its own directory first on the path), and the median of
the rounds' differences printed: on a machine whose speed drifts by more than a change saves, the
paired difference is what measures the change.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
# The top-level packages alone (what one would guess); the measured list above is the reference.
FIXED_BASELINE = "import ortools.sat.python.cp_model, pydantic, typer, rich, yaml, pandas"

# The console script's entry, for a checkout found first on the path (``--against``).
_ENTRY = "import sys; sys.argv = ['planner', 'solve', sys.argv[1], '--quiet']; from planner.cli import entry; entry()"

# Runs the CLI in-process (as the console script does), then lists the third-party
# modules it loaded, parents first.
_PROBE = r"""
import json, sys
from planner.cli import main
sys.argv = ["planner", "solve", sys.argv[1], "--quiet"]
try:
    main()
except SystemExit:
    pass
std = set(sys.stdlib_module_names)
mods = sorted(
    (m for m in list(sys.modules) if m.split(".")[0] not in std and m.split(".")[0] != "planner"
     and not m.startswith("_") and sys.modules[m] is not None),
    key=lambda m: (m.count("."), m),
)
print(json.dumps(mods))
"""

# Phases of one solve, in one fresh process, in the CLI's order: the solver's modules are
# imported while the options' workers estimate (as `planner solve` does).
_BREAKDOWN = r"""
import io, json, os, sys, time
t0 = time.perf_counter()
import planner.cli
from planner.context import prepare
from planner.io.problem_io import load_problem
t1 = time.perf_counter()
loaded = load_problem(sys.argv[1])
t2 = time.perf_counter()

def solver_modules():
    import planner.pipeline, planner.report.terminal, planner.simulate.check

ctx = prepare(loaded, meanwhile=solver_modules)
t3 = time.perf_counter()
from planner.pipeline import plan_context
from planner.optimize.model import build
from planner.optimize.solve import solve
from planner.simulate.check import check_by_simulation
from planner.simulate.speculate import Speculation
early = Speculation()  # as `planner solve`: the search's first plan simulated meanwhile
plan = plan_context(ctx, watcher=early)   # build, solve, tie-breaks, read back, constraints, verify
t4 = time.perf_counter()
plan, ctx = check_by_simulation(ctx, plan, False, workers=os.cpu_count() or 1, early=early)
t5 = time.perf_counter()
from rich.console import Console
planner.report.terminal.print_plan(plan, Console(file=io.StringIO(), width=140))
t6 = time.perf_counter()
built = build(ctx.problem, ctx.catalog, ctx.workloads)
t7 = time.perf_counter()
solved = solve(built.model)
t8 = time.perf_counter()
print(json.dumps({
    "import planner.cli, context, problem schema": t1 - t0,
    "load problem": t2 - t1,
    "options (prepare), OR-Tools imported meanwhile": t3 - t2,
    "plan_context (build, solve, tie-breaks, read back, verify)": t4 - t3,
    "simulation check (what is left of it)": t5 - t4,
    "print summary": t6 - t5,
    "  of the plan: build the CP-SAT model again": t7 - t6,
    "  of the plan: the least-TCO solve again": t8 - t7,
    "deterministic_time": solved.solver.deterministic_time,
    "status": solved.status,
}))
"""


def _wall(cmd: list[str], env: dict[str, str], cold: bool = False) -> float:
    if cold:  # a cache folder of its own, empty: the run builds what a first run builds
        with tempfile.TemporaryDirectory(prefix="planner-cold-") as folder:
            return _wall(cmd, {**env, "PLANNER_CACHE_DIR": folder})
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr}")
    return seconds


def _console_script() -> str:
    """The installed `planner` entry point itself (not a version-manager shim in front of it)."""
    candidate = Path(sysconfig.get_path("scripts")) / "planner"
    if candidate.exists():
        return str(candidate)
    found = shutil.which("planner")
    if not found:
        raise SystemExit("`planner` is not installed: python -m pip install -e .")
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--problem", default="problems/startup.yaml")
    ap.add_argument("--breakdown", action="store_true", help="also time the phases of one solve in-process")
    ap.add_argument("--against", type=Path, help="another checkout to compare with, round by round")
    ap.add_argument(
        "--no-compile",
        action="store_true",
        help="do not byte-compile the planner's modules first (an editable install under "
        "PYTHONDONTWRITEBYTECODE=1 then compiles them on every run)",
    )
    ap.add_argument("--no-cold", action="store_true", help="do not time a first run (an empty cache folder)")
    args = ap.parse_args()
    checkouts = [ROOT] if args.against is None else [ROOT, args.against.resolve()]
    if args.against is not None and not (checkouts[1] / "planner" / "cli.py").exists():
        raise SystemExit(f"--against {args.against}: no planner/cli.py there (a checkout of the planner?)")
    if not args.no_compile:
        # As `pip install .` does for an installed package (its third-party modules, the
        # baseline's, are compiled already); stale files are recompiled, none are removed.
        for checkout in checkouts:
            subprocess.run(
                [PY, "-m", "compileall", "-q", str(checkout / "planner")],
                env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
                check=True,
            )
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": os.environ.get("PYTHONDONTWRITEBYTECODE", "")}

    probe = subprocess.run([PY, "-c", _PROBE, args.problem], cwd=ROOT, capture_output=True, text=True, check=True)
    modules = json.loads(probe.stdout.strip().splitlines()[-1])
    tops = sorted({m.split(".")[0] for m in modules})
    baseline_src = "\n".join(f"try:\n    import {m}\nexcept Exception:\n    pass" for m in modules)

    script = _console_script()
    commands = {
        "python -c pass (bare interpreter)": [PY, "-c", "pass"],
        f"baseline: import the same {len(modules)} third-party modules": [PY, "-c", baseline_src],
        "import ortools.sat.python.cp_model, pydantic, typer, rich, yaml, pandas": [PY, "-c", FIXED_BASELINE],
        f"planner solve {args.problem} (console script)": [script, "solve", args.problem, "--quiet"],
    }
    on_path = shutil.which("planner")
    if on_path and Path(on_path).resolve() != Path(script).resolve():
        commands[f"planner solve {args.problem} (as found on PATH: {on_path})"] = [
            "planner",
            "solve",
            args.problem,
            "--quiet",
        ]

    cold_label = f"planner solve {args.problem} (console script, empty cache folder: a first run)"
    if not args.no_cold:
        commands[cold_label] = [script, "solve", args.problem, "--quiet"]
    paired = [f"{c} (python -c)" for c in checkouts] if args.against is not None else []
    folders = [tempfile.mkdtemp(prefix="planner-paired-") for _ in paired]
    for label, checkout, folder in zip(paired, checkouts, folders, strict=False):
        # its directory first on the path: that checkout's planner, not the installed one. -P: no
        # working directory ahead of it (this checkout's, where every command runs), which would
        # have run this checkout's planner for both. A cache folder of its own, kept across the
        # rounds: two checkouts' entries for one problem file replace each other's
        commands[label] = [
            "env",
            f"PYTHONPATH={checkout}",
            f"PLANNER_CACHE_DIR={folder}",
            PY,
            "-P",
            "-c",
            _ENTRY,
            args.problem,
        ]

    # Warm the file cache once so the first timed run is not an outlier.
    for cmd in commands.values():
        subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    print(f"python {sys.version.split()[0]} on {os.cpu_count()} CPUs; median of {args.runs} runs each")
    print(f"third-party packages the solve imports: {', '.join(tops)}")
    # Rounds of one run of each command, in turn: a machine whose load drifts (a shared host)
    # slows both sides of the ratio alike, where all of one command's runs, then all of the
    # next's, would put the drift in the ratio.
    times: dict[str, list[float]] = {label: [] for label in commands}
    for _ in range(args.runs):
        for label, cmd in commands.items():
            times[label].append(_wall(cmd, env, cold=label == cold_label))
    results = {label: statistics.median(ts) for label, ts in times.items()}
    for label, med in results.items():
        print(f"  {med:6.3f} s  {label}   [{', '.join(f'{t:.2f}' for t in times[label])}]")

    labels = list(results)
    baseline, planner_s = results[labels[1]], results[labels[3]]
    ratio = planner_s / baseline
    per_round = statistics.median(p / b for p, b in zip(times[labels[3]], times[labels[1]], strict=True))
    print(
        f"\nplanner / baseline = {planner_s:.3f} / {baseline:.3f} = {ratio:.2f}x  (goal: < 2x) "
        f"{'OK' if ratio < 2 else 'OVER'}; median of the rounds' ratios {per_round:.2f}x"
    )
    print(f"planner's own time beyond imports: {planner_s - baseline:.3f} s")
    if cold_label in results:
        cold_s = results[cold_label]
        cold_round = statistics.median(c / b for c, b in zip(times[cold_label], times[labels[1]], strict=True))
        print(
            f"a first run (empty cache folder) / baseline = {cold_s:.3f} / {baseline:.3f} = {cold_s / baseline:.2f}x; "
            f"median of the rounds' ratios {cold_round:.2f}x"
        )
    if paired:
        diff = statistics.median(a - b for a, b in zip(times[paired[0]], times[paired[1]], strict=True))
        print(f"this checkout - {checkouts[1]}: median of the rounds' differences {diff:+.3f} s")
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)

    if args.breakdown:
        out = subprocess.run([PY, "-c", _BREAKDOWN, args.problem], cwd=ROOT, capture_output=True, text=True, check=True)
        phases = json.loads(out.stdout.strip().splitlines()[-1])
        print("\nphases of one solve (in-process, one run):")
        for name, value in phases.items():
            if isinstance(value, float) and name != "deterministic_time":
                print(f"  {value:6.3f} s  {name}")
            else:
                print(f"  {value}  {name}")


if __name__ == "__main__":
    main()
