"""The terminal summary: a short memo with tables, read from a finished Plan."""

from __future__ import annotations

from rich.console import Console, JustifyMethod
from rich.table import Table
from rich.text import Text

from planner.report.gantt import gantt_lines
from planner.report.text import markup, plain, printable
from planner.schema.plan import Plan


def _usd(x: float) -> str:
    return f"-${-x:,.0f}" if x < 0 else f"${x:,.0f}"


def print_plan(plan: Plan, console: Console) -> None:
    if plan.status == "infeasible":
        print_infeasible(plan, console)
        return
    gap = "proven optimal" if plan.status == "optimal" else f"best found, gap {100 * (plan.gap or 0):.2f}%"
    console.print(
        f"[bold]{markup(plan.problem)}[/bold]: TCO {_usd(plan.tco_usd)} "
        f"over {markup(plan.assumptions.get('horizon_years'))} years "
        f"({gap}); capex {_usd(plan.capex_usd)}, opex {_usd(plan.opex_usd_per_year)}/year; "
        f"{plan.facility_power_kw:,.1f} kW facility power, {plan.racks} racks.",
        emoji=False,
    )
    if plan.rent_usd_per_hour:
        console.print(f"Cloud rent for services: ${plan.rent_usd_per_hour:,.2f} per hour (year 1).")
    _buy(plan, console)
    _fabrics(plan, console)
    _purchase_years(plan, console)
    _runs(plan, console)
    _routing(plan, console)
    _stochastic(plan, console)
    _schedule(plan, console)
    _money(plan, console)
    _rent_vs_buy(plan, console)
    _limits(plan, console)
    _simulation(plan, console)
    _utilisation(plan, console)
    _advice(plan, console)
    if plan.explanations is not None:
        print_explanations(plan, console)
    if plan.verification:
        console.print("[bold red]Verifier found problems with this plan:[/bold red]")
        for line in plan.verification:
            console.print(plain(f"  - {line}"))
    console.print("[dim]Prices are catalog estimates unless your problem file quotes them (catalog.prices_usd).[/dim]")


def _buy(plan: Plan, console: Console) -> None:
    t = Table(title="What to buy", title_justify="left")
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("category", "left"),
        ("sku", "left"),
        ("qty", "right"),
        ("unit price", "right"),
        ("extended", "right"),
        ("unit power", "right"),
    )
    for col, just in columns:
        t.add_column(col, justify=just)
    for r in plan.purchase:
        t.add_row(
            plain(r.category),
            plain(r.sku),
            str(r.quantity),
            _usd(r.unit_price_usd),
            _usd(r.extended_price_usd),
            f"{r.unit_power_w:,.0f} W",
        )
    t.add_row("", "[bold]total capex[/bold]", "", "", f"[bold]{_usd(plan.capex_usd)}[/bold]", "")
    console.print(t)


def _fabrics(plan: Plan, console: Console) -> None:
    """Each scale-out fabric's topology and switch counts (the purchase list's switch lines)."""
    if not plan.network:
        return
    t = Table(title="Scale-out fabrics", title_justify="left")
    for col in ("fabric", "topology", "NIC ports", "leaves", "spines", "links", "down:up"):
        t.add_column(col, justify="left" if col in ("fabric", "topology") else "right")
    for n in plan.network:
        t.add_row(
            plain(n["fabric"]),
            plain(n.get("topology", "fat-tree")),
            str(n["ports"]),
            str(n["leaves"]),
            str(n["spines"]),
            str(n["cables"]),
            plain(n.get("oversubscription", "1:1")),
        )
    console.print(t)


def _runs(plan: Plan, console: Console) -> None:
    if plan.training:
        t = Table(title="Training jobs", title_justify="left")
        job_cols = ("job", "GPUs", "hot spares", "server / fabric", "days", "start", "end", "deadline", "MFU")
        for col in (*job_cols, "goodput"):
            t.add_column(col)
        for r in plan.training:
            t.add_row(
                plain(r.name),
                plain(f"{r.gpus} x {r.gpu}"),
                f"{r.hot_spare_servers} ({r.hot_spare_gpus} GPUs)" if r.hot_spare_servers else "-",
                f"rented at ${r.rent_usd_per_gpu_hour:g}/GPU-h" if r.rented else plain(f"{r.server} / {r.fabric}"),
                f"{r.days:.1f}",
                f"{r.start_day:.1f}",
                f"{r.end_day:.1f}",
                f"{r.deadline_days:g}",
                f"{100 * r.mfu:.0f}%",
                "" if r.goodput is None else f"{100 * r.goodput:.1f}%",
            )
        console.print(t)
    if plan.inference:
        t = Table(title="Inference services", title_justify="left")
        by_year = any(s.year is not None for s in plan.inference)
        cols = ("service", *(["year"] if by_year else []), "replicas", "precision", "rps each", "batch", "TTFT ms")
        for col in (*cols, "TPOT ms", "capacity / need"):
            t.add_column(col)
        for s in plan.inference:
            for i, rep in enumerate(s.replicas):
                t.add_row(
                    plain(s.name) if i == 0 else "",
                    *([str(s.year) if i == 0 else ""] if by_year else []),
                    plain(
                        f"{rep.count} x {rep.gpus_per_replica} {rep.gpu}"
                        + (" rented" if rep.rented else "")
                        + ("" if rep.mode == "aggregated" else f" {rep.mode}")
                    ),
                    plain(rep.precision),
                    f"{rep.rps_per_replica:.2f}",
                    str(rep.batch),
                    f"{rep.ttft_ms:.0f}" if rep.mode != "decode" else "-",
                    f"{rep.tpot_ms:.1f}" if rep.mode != "prefill" else "-",
                    f"{s.capacity_rps:.1f} / {s.required_rps:g} rps (+{s.spare_replicas} spare)" if i == 0 else "",
                )
        console.print(t)
        for s in plan.inference:
            if s.serving_mode != "aggregated":
                console.print(
                    plain(
                        f"{s.name}{'' if s.year is None else f' (year {s.year})'}: {s.serving_mode} serving, "
                        f"prefill : decode replicas {s.prefill_decode_ratio}, KV caches "
                        f"{s.kv_transfer_gb_per_s:.2f} GB/s at the prefill replicas' capacity"
                    )
                )
            if s.mode_reason:
                console.print(plain(f"{s.name}: {s.mode_reason}"))


def _purchase_years(plan: Plan, console: Console) -> None:
    """A plan by year: when each server is bought (cash-flow year 0 = today)."""
    if not any(r.year for r in plan.servers):
        return
    t = Table(title="Purchase schedule (servers bought at the start of each year)", title_justify="left")
    years = sorted({r.year for r in plan.servers})
    t.add_column("server / GPU")
    for y in years:
        t.add_column(f"year {y}", justify="right")
    keys = sorted({(r.server, r.gpu) for r in plan.servers})
    for server, gpu in keys:
        counts = {r.year: r.count for r in plan.servers if (r.server, r.gpu) == (server, gpu)}
        t.add_row(plain(f"{server} / {gpu}"), *(str(counts.get(y, "")) for y in years))
    capex = {f.year: f.capex_usd for f in plan.cash_flows}
    t.add_row("[bold]capex[/bold]", *(_usd(capex.get(y, 0.0)) for y in years))
    console.print(t)


def _routing(plan: Plan, console: Console) -> None:
    """Request-size mixes: which replica kinds serve which share of each bucket (a router's table)."""
    rows = [s for s in plan.inference if s.routing]
    if not rows:
        return
    t = Table(title="Routing by request size (share of each bucket per replica kind)", title_justify="left")
    for col in ("service", "bucket (in/out tokens)", "share", "rps", "routed to", "p99 TTFT / TPOT ms"):
        t.add_column(col)
    for s in rows:
        name = s.name if s.year is None else f"{s.name} (year {s.year})"
        for i, b in enumerate(s.routing):
            for j, r in enumerate(b.routes):
                t.add_row(
                    plain(name) if i == 0 and j == 0 else "",
                    plain(f"{b.bucket} ({b.input_tokens}/{b.output_tokens})") if j == 0 else "",
                    f"{100 * b.share:.1f}%" if j == 0 else "",
                    f"{b.rps:.2f}" if j == 0 else "",
                    plain(f"{100 * r.share:.0f}% -> {r.gpus_per_replica} x {r.gpu} {r.precision}"),
                    f"{r.ttft_ms:.0f} / {r.tpot_ms:.1f}",
                )
    console.print(t)


def _schedule(plan: Plan, console: Console) -> None:
    """The training jobs as a Gantt chart in plain characters, grouped by the pool they share."""
    lines = gantt_lines(plan)
    if not lines:
        return
    console.print(Text(printable(lines[0]), style="bold"), soft_wrap=True)
    for line in lines[1:]:
        console.print(plain(line), soft_wrap=True)  # Text: a job name is never read as markup


def _money(plan: Plan, console: Console) -> None:
    t = Table(title="TCO breakdown (present value)", title_justify="left")
    t.add_column("component")
    t.add_column("USD", justify="right")
    t.add_column("share", justify="right")
    for k, v in plan.tco_breakdown_usd.items():
        t.add_row(plain(k), _usd(v), f"{100 * v / plan.tco_usd:.1f}%" if plan.tco_usd else "-")
    t.add_row("[bold]TCO[/bold]", f"[bold]{_usd(plan.tco_usd)}[/bold]", "")
    console.print(t)


def _rent_vs_buy(plan: Plan, console: Console) -> None:
    if not plan.rent_vs_buy:
        return
    parts = []
    for gpu, row in plan.rent_vs_buy.items():
        u = row.get("break_even_utilization_on_demand")
        if u is not None:
            parts.append(f"{gpu} {100 * u:.0f}%")
    console.print(plain("Owning beats renting on demand above this share of the hours: " + ", ".join(parts) + "."))


def _limits(plan: Plan, console: Console) -> None:
    t = Table(title="Limits", title_justify="left")
    for col in ("limit", "used", "of", "slack", "status"):
        t.add_column(col)
    for c in plan.constraints:
        t.add_row(
            plain(c.name),
            plain(f"{_num(c.used)} {c.unit}"),
            "-" if c.limit is None else _num(c.limit),
            "-" if c.slack is None else _num(c.slack),
            _status(c.binding, c.tight),
        )
    console.print(t)
    if any(c.binding is None for c in plan.constraints):
        console.print("tight: less than one purchase unit of slack; what loosening a limit saves: --explain.")


def _simulation(plan: Plan, console: Console) -> None:
    """The plan's services replayed request by request (``planner simulate``), against their targets."""
    if not plan.simulation:
        return
    table = Table(title="Checked by simulation (p99, ms; analytic: the load model at the same load)")
    for col in ("service", "requests", "TTFT p99", "analytic", "TPOT p99", "analytic", "within target", "verdict"):
        table.add_column(col, justify="left" if col == "service" else "right")
    for r in plan.simulation:
        table.add_row(
            markup(r.name),
            f"{r.requests:,}",
            "-" if r.ttft_p99_ms is None else f"{r.ttft_p99_ms:,.0f}",
            f"{r.analytic_ttft_p99_ms:,.0f}",
            "-" if r.tpot_p99_ms is None else f"{r.tpot_p99_ms:,.1f}",
            f"{r.analytic_tpot_p99_ms:,.1f}",
            f"{r.slo_attainment:.1%}",
            "holds" if r.holds else "[bold red]misses[/bold red]",
        )
    console.print(table)


def _utilisation(plan: Plan, console: Console) -> None:
    if not plan.utilisation:
        return
    table = Table(title="Owned pools over the horizon")
    for col in ("pool", "GPUs", "GPU-days", "busy GPU-days", "busy"):
        table.add_column(col, justify="left" if col == "pool" else "right")
    for row in plan.utilisation:
        table.add_row(
            plain(row.pool), str(row.gpus), f"{row.gpu_days:,.0f}", f"{row.busy_gpu_days:,.0f}", f"{row.busy_share:.0%}"
        )
    console.print(table)


def _advice(plan: Plan, console: Console) -> None:
    """What a buyer should know: the parts (uncalibrated, end-of-life, long lead time), simulation."""
    if not plan.advice:
        return
    console.print("[bold]Notes on the plan and its parts[/bold]")
    for row in plan.advice:
        money = "" if row.usd is None else f" ({_usd(row.usd)})"
        console.print(f"  - {markup(row.message)}{money}", emoji=False)


def _status(binding: bool | None, tight: bool) -> str:
    """Binding only when a re-solve measured it; before that, only whether the slack is tight."""
    if binding is not None:
        return "[yellow]binding[/yellow]" if binding else "not binding"
    return "tight" if tight else ""


def _mix(gpus: dict[str, int]) -> str:
    return " + ".join(f"{n}x {g}" for g, n in gpus.items()) or "nothing"


def print_explanations(plan: Plan, console: Console) -> None:
    """A short memo: what binds and what loosening it is worth, how flat the optimum is, why not a GPU."""
    ex = plan.explanations
    assert ex is not None
    console.print("[bold]What the limits are worth[/bold] (each loosened by its step and solved again):")
    measured = [c for c in plan.constraints if c.marginal_usd is not None]
    binding = [c for c in measured if c.binding]
    for c in binding:
        console.print(
            plain(f"  - {c.name}: moving {c.path} by {_num(c.step or 0)} {c.unit} saves {_usd(-(c.marginal_usd or 0))}")
        )
    if measured and not binding:
        console.print("  no limit binds: loosening any of them by its step saves nothing.")
    free = [c.name for c in measured if not c.binding]
    if binding and free:
        console.print(plain(f"  not binding: {', '.join(free)}"))
    if ex.budget_steps:
        console.print("[bold]Budget steps[/bold] (the next budget levels at which TCO drops):")
        for step in ex.budget_steps:
            console.print(
                f"  - a budget of {_usd(step.budget_usd)} saves {_usd(step.saves_usd)} "
                f"(TCO {_usd(step.tco_usd)}, {markup(_mix(step.gpus))})",
                emoji=False,
            )
    if ex.budget_saturates_at_usd is not None:
        console.print(f"  above {_usd(ex.budget_saturates_at_usd)} of capex, more budget saves nothing.")
    if ex.runner_up is not None:
        r = ex.runner_up
        share = 100 * r.extra_usd / plan.tco_usd if plan.tco_usd else 0.0
        console.print(
            f"[bold]Runner-up[/bold] with a different GPU mix: {markup(_mix(r.gpus))} at {_usd(r.tco_usd)} "
            f"(+{_usd(r.extra_usd)}, {share:.1f}% more).",
            emoji=False,
        )
    if ex.why_not:
        t = Table(title="Why not", title_justify="left")
        for col in ("GPU", "workload", "plan TCO with it", "extra", "how, or why not"):
            t.add_column(col)
        for w in ex.why_not:
            t.add_row(
                plain(w.gpu),
                plain(w.workload),
                "-" if w.tco_usd is None else _usd(w.tco_usd),
                "-" if w.extra_usd is None else _usd(w.extra_usd),
                plain(w.how),
            )
        console.print(t)
    console.print(f"[dim]explanations took {ex.seconds:.1f} s of re-solving[/dim]")


def _num(x: float) -> str:
    """The plan's own figure to the thousandth (as in its JSON), with thousands separators."""
    return f"{x:,.3f}".rstrip("0").rstrip(".")


def print_infeasible(plan: Plan, console: Console) -> None:
    console.print(f"[bold red]{markup(plan.problem)}: no feasible plan.[/bold red]", emoji=False)
    if plan.diagnosis:
        for line in plan.diagnosis.summary:
            console.print(plain(line))


def _stochastic(plan: Plan, console: Console) -> None:
    """solve --scenarios: the hardware bought for every scenario, what each scenario costs on it,
    and what planning for uncertainty is worth (VSS) and what knowing the future would be (EVPI)."""
    st = plan.stochastic
    if not st:
        return

    def usd(x: object) -> str:
        return "-" if x is None else f"${float(str(x)):,.0f}"

    t = Table(title=f"Two-stage plan over {st['scenarios']} scenarios (bought once)", title_justify="left")
    for col in ("scenario", "probability", "TCO on this hardware", "its own optimum", "deterministic plan's hardware"):
        t.add_column(col)
    for r in st["per_scenario"]:
        t.add_row(
            plain(str(r["name"])),
            f"{100 * r['probability']:.1f}%",
            usd(r["tco_usd"]) if r["status"] != "infeasible" else "cannot be served",
            usd(r.get("own_optimum_tco_usd")),
            usd(r.get("deterministic_hardware_tco_usd")),
        )
    console.print(t)
    console.print(
        plain(
            f"Expected TCO {usd(st['expected_tco_usd'])}; the deterministic plan's hardware "
            f"{usd(st['deterministic_expected_tco_usd'])}: value of the stochastic solution (VSS) "
            f"{usd(st['vss_usd'])}. Knowing the future would save {usd(st['evpi_usd'])} (EVPI)."
        )
    )
    if st.get("gap") is not None:
        proof = "proven the best purchase" if st.get("status") == "optimal" else f"at most {100 * st['gap']:.1f}% above"
        console.print(
            plain(
                f"No purchase serving every scenario costs less than {usd(st.get('lower_bound_usd'))} in "
                f"{'expected TCO plus the tail term' if st.get('risk') else 'expected TCO'}: this one is {proof} "
                f"({st.get('method')}, {st.get('purchases_scored')} purchases scored)."
            )
        )
