"""`planner options`: every GPU option per workload, feasible with its figures, or why not."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from planner.report.text import plain

if TYPE_CHECKING:
    from planner.context import Context


def options_json(ctx: Context) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for w in ctx.workloads:
        rows: list[dict[str, Any]] = []
        for o in w.inference:
            rows.append(
                {
                    "gpu": o.gpu,
                    "server": o.pool.server,
                    "precision": o.precision,
                    "gpus_per_replica": o.gpus_per_replica,
                    "rps_per_replica": o.rps_per_replica,
                    "mode": o.mode,
                    **{k: v for k, v in o.estimate.to_dict().items() if k != "reason"},
                }
            )
        for t in w.training:
            rows.append(
                {
                    "gpu": t.gpu,
                    "server": t.pool.server,
                    "fabric": t.pool.fabric,
                    "gpus": t.gpus,
                    **{k: v for k, v in t.estimate.to_dict().items() if k != "reason"},
                }
            )
        out[w.name] = {
            "kind": w.kind,
            "model": w.label,
            "feasible": rows,
            "infeasible": {g: r for g, r in w.reasons_by_gpu().items()},
        }
    return out


def print_options(ctx: Context, console: Console) -> None:
    for w in ctx.workloads:
        t = Table(title=plain(f"{w.kind} {w.name} ({w.label})"), title_justify="left")
        if w.kind == "inference":
            for col in (
                "GPU",
                "server",
                "precision",
                "TP",
                "batch",
                "rps/replica",
                "rps/GPU",
                "TTFT ms",
                "TPOT ms",
                "figures from",
            ):
                t.add_column(col)
            best = _best_per_gpu([(o.gpu, o.rps_per_replica / o.gpus_per_replica, o) for o in w.inference])
            for o in best:
                e = o.estimate
                t.add_row(
                    plain(o.gpu),
                    plain(o.pool.server),
                    plain(o.precision),
                    str(o.gpus_per_replica),
                    str(e.batch),
                    f"{o.rps_per_replica:.2f}",
                    f"{o.rps_per_replica / o.gpus_per_replica:.2f}",
                    f"{e.ttft_ms:.0f}",
                    f"{e.tpot_ms:.1f}",
                    _provenance(o.measured, e.factors),
                )
        else:
            cols = ("GPU", "server", "fabric", "GPUs", "hot spares", "days", "MFU", "goodput", "memory/GPU GB")
            for col in (*cols, "figures from"):
                t.add_column(col)
            best = _best_per_gpu([(o.gpu, -o.gpus, o) for o in w.training])
            for o in best:
                e = o.estimate
                t.add_row(
                    plain(o.gpu),
                    plain(o.pool.server),
                    plain(o.pool.fabric),
                    str(o.gpus),
                    str(e.hot_spare_servers) if e.hot_spare_servers else "-",
                    f"{e.days:.1f}",
                    f"{100 * e.mfu:.0f}%",
                    f"{100 * e.goodput:.1f}%",
                    f"{e.memory_per_gpu_gb:.1f}",
                    _provenance(False, e.factors),
                )
        console.print(t)
        reasons = w.reasons_by_gpu()
        if reasons:
            console.print("[bold]cannot run it:[/bold]")
            for gpu, why in sorted(reasons.items()):
                console.print(plain(f"  {gpu}: {why[-1]}"))
        console.print()


def _provenance(measured: bool, factors: dict[str, Any]) -> str:
    """Say where a row's figures come from, and whether the model is on calibrated ground."""
    if measured:
        return "your benchmark"
    calibrated = str(factors.get("calibrated", "")).startswith("yes")
    return "model (calibrated)" if calibrated else "[yellow]model (uncalibrated generation)[/yellow]"


def _best_per_gpu(scored: list[tuple[str, float, Any]]) -> list[Any]:
    """One row per GPU: its best option (most rps per GPU; fewest GPUs for training)."""
    best: dict[str, tuple[float, Any]] = {}
    for gpu, score, option in scored:
        if gpu not in best or score > best[gpu][0]:
            best[gpu] = (score, option)
    return [best[g][1] for g in sorted(best)]
