"""Two-stage plans by scenario decomposition: scenario-sized solves in worker processes, a plan
whose expected TCO is measured, and a floor under every purchase.

The two-stage model holds a full build per scenario, so it grows with the scenario count faster
than CP-SAT's bound improves (20 draws of the startup example: 55% model gap after 60 det. s).
But once the purchase is fixed, operating it in one scenario is a tiny model (only the options
on the bought pools remain: ~10 ms), so purchases are cheap to score and the search moves over
purchases:

1. **Each scenario's own optimum** (wait-and-see): its TCO, its purchase, its bound.
2. **Candidates**: every scenario's own purchase, the deterministic plan's, their element-wise
   largest; each operated in every scenario (exact, in workers); the best is the incumbent.
3. **Local search** over purchases: a server more or fewer on a pool, one moved between pools;
   the best improving move until none improves.
4. **The floor**: no purchase costs scenario *s* less than its own optimum (its proven bound),
   so the probability-weighted own bounds are a proven lower bound (with a tail weight, the same
   risk measure of them: both are monotone). The gap to it is at most the EVPI.

Every figure is a solve of its own scenario; nothing is read off a shared model."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from planner.assemble import assemble_plan
from planner.context import Context, prepare
from planner.errors import InputError, TimeLimitError
from planner.io.overrides import variant
from planner.io.problem_io import LoadedProblem
from planner.optimize.model import build
from planner.optimize.solve import solve
from planner.whatif.fixed import ServerCounts, fixed_tco

Hardware = tuple[tuple[tuple[str, str, str], int], ...]  # the purchase: (server, gpu, fabric) -> count, sorted
Mapper = Callable[[Callable[[Any], Any], Sequence[Any]], list[Any]]

SEARCH_ROUNDS = 50  # local search moves at most (each strictly improves, so it ends anyway)


def freeze(servers: ServerCounts) -> Hardware:
    return tuple(sorted((k, n) for k, n in servers.items() if n > 0))


def thaw(hardware: Hardware) -> ServerCounts:
    return dict(hardware)


@dataclass(frozen=True)
class Work:
    """What every worker job carries: the run, the base problem and the scenarios' changes."""

    token: str
    base: LoadedProblem
    overrides: tuple[dict[str, Any], ...]  # the scenarios', then the base problem's ({})
    time_limit_s: float | None


@dataclass(frozen=True)
class Own:
    """A scenario's own optimum: its TCO, purchase and proven floor (None: nothing serves it)."""

    tco_usd: float | None
    hardware: Hardware | None
    floor_usd: float | None
    optimal: bool


# ---- in the workers: contexts prepared once per worker and run ----

_contexts: dict[tuple[str, int], Context] = {}


def remember(work: Work, i: int, ctx: Context) -> Context:
    """Hold a context prepared here (worker processes forked after this inherit it)."""
    _contexts[(work.token, i)] = ctx
    return ctx


def context_of(work: Work, i: int) -> Context:
    key = (work.token, i)
    if key not in _contexts:
        _contexts[key] = _prepare(work, i)
    return _contexts[key]


def _prepare(work: Work, i: int) -> Context:
    """Scenario i's context; from the base problem's (when held) if its changes leave every option
    as it was (demand, money), as the what-if sweeps do."""
    from planner.explain.resolve import derived_context

    o = work.overrides[i]
    held = _contexts.get((work.token, len(work.overrides) - 1))
    if not o:
        return held or prepare(work.base)
    return derived_context(held, o) if held is not None else prepare(variant(work.base, o))


def _dollars(ctx: Context, built: Any, solved: Any) -> tuple[float, float]:
    """The plan's TCO and the bound in the same dollars (the model counts whole dollars per item)."""
    tco = assemble_plan(ctx, built, solved).tco_usd
    ratio = tco / solved.objective if solved.objective else 1.0
    return tco, min(tco, solved.bound * ratio)


def own_optimum(job: tuple[Work, int, bool]) -> Own:
    """Scenario i's own optimum; ``tie_breaks``: as ``planner solve`` would plan it (the equal-TCO
    tie-breaks too: the deterministic plan's purchase)."""
    work, i, tie_breaks = job
    ctx = context_of(work, i)
    if not all(w.feasible for w in ctx.workloads):
        return Own(None, None, None, True)
    if tie_breaks:
        from planner.pipeline import plan_context
        from planner.whatif.fixed import servers_of

        plan = plan_context(ctx, work.time_limit_s)  # out of time: TimeLimitError
        if plan.status not in ("optimal", "feasible"):
            return Own(None, None, None, True)
        return Own(plan.tco_usd, freeze(servers_of(plan)), None, plan.status == "optimal")
    b = build(ctx.problem, ctx.catalog, ctx.workloads, kept=ctx.kept)
    # from the base plan's values, when derived from it; the fleet cuts as `planner solve` adds them
    solved = solve(b.model, work.time_limit_s, start_values=ctx.start, escalate=b.later_cuts)
    if solved.status == "unknown":  # out of time is not "no purchase serves it"
        raise TimeLimitError()
    if solved.status not in ("optimal", "feasible"):
        return Own(None, None, None, True)
    tco, floor = _dollars(ctx, b, solved)
    hardware = freeze({(k.server, k.gpu, k.fabric): solved.value(p.servers) for k, p in b.pools.items()})
    return Own(tco, hardware, floor, solved.status == "optimal")


def operate(job: tuple[Work, int, list[Hardware]]) -> list[float | None]:
    """Scenario i's TCO operating each purchase (None: it cannot serve the scenario)."""
    work, i, purchases = job
    ctx = context_of(work, i)
    out: list[float | None] = []
    for hw in purchases:
        got = fixed_tco(ctx, thaw(hw), work.time_limit_s)
        out.append(None if got is None else assemble_plan(ctx, *got).tco_usd)
    return out


# ---- in the parent: the search over purchases ----


@dataclass
class Search:
    """Purchases scored across the servable scenarios (each operated exactly, in workers)."""

    run: Mapper
    work: Work
    servable: list[int]
    probs: list[float]
    risk: Any  # joint.Risk | None
    tcos: dict[Hardware, list[float | None]] = field(default_factory=dict)

    def score(self, hw: Hardware) -> float | None:
        row = self.tcos[hw]
        if any(t is None for t in row):
            return None
        return risk_adjusted(self.probs, [t for t in row if t is not None], self.risk)

    def evaluate(self, purchases: list[Hardware]) -> None:
        new = [hw for hw in dict.fromkeys(purchases) if hw not in self.tcos]
        if not new:
            return
        by_scenario = self.run(operate, [(self.work, i, new) for i in self.servable])
        for k, hw in enumerate(new):
            self.tcos[hw] = [row[k] for row in by_scenario]

    def best(self) -> Hardware | None:
        scored = [(s, hw) for hw in self.tcos if (s := self.score(hw)) is not None]
        return min(scored)[1] if scored else None

    def improve(self) -> Hardware | None:
        """Best-improvement local search from the best purchase scored so far."""
        incumbent = self.best()
        for _ in range(SEARCH_ROUNDS):
            if incumbent is None:
                return None
            pools = sorted({k for hw in self.tcos for k, _ in hw})
            self.evaluate(neighbours(incumbent, pools))
            better = self.best()
            if better == incumbent:
                break
            incumbent = better
        return incumbent


def neighbours(hw: Hardware, pools: list[tuple[str, str, str]]) -> list[Hardware]:
    """A server fewer or more on any known pool, or one moved from a pool to another."""
    counts = thaw(hw)
    out = []
    for k in pools:
        for d in (-1, 1):
            if counts.get(k, 0) + d >= 0:
                out.append(freeze({**counts, k: counts.get(k, 0) + d}))
        for k2 in pools:
            if k2 != k and counts.get(k, 0) > 0:
                out.append(freeze({**counts, k: counts[k] - 1, k2: counts.get(k2, 0) + 1}))
    return out


def largest(purchases: list[Hardware]) -> Hardware:
    top: ServerCounts = {}
    for hw in purchases:
        for k, n in hw:
            top[k] = max(top.get(k, 0), n)
    return freeze(top)


def risk_adjusted(probs: list[float], tcos: list[float], risk: Any) -> float:
    """The expected TCO, plus the tail weight times its conditional value at risk."""
    expected = sum(p * t for p, t in zip(probs, tcos, strict=True))
    if risk is None or risk.weight == 0:
        return expected
    return expected + risk.weight * cvar(probs, tcos, risk.alpha)


def cvar(probs: list[float], values: list[float], alpha: float) -> float:
    """Rockafellar-Uryasev on a discrete distribution: the least eta + E[(X - eta)+] / (1 - alpha),
    reached at one of the values."""
    return min(
        eta + sum(p * max(0.0, v - eta) for p, v in zip(probs, values, strict=True)) / (1 - alpha) for eta in values
    )


@dataclass
class Decomposed:
    own: list[Own]  # every scenario's, then the base problem's (the deterministic plan)
    servable: list[int]
    probs: list[float]  # over the servable scenarios
    search: Search
    hardware: Hardware | None  # the best purchase found (None: none serves every scenario)
    floors: list[float]  # per servable scenario: its own optimum's proven bound
    floor_usd: float = 0.0  # proven: no purchase serving every scenario does better (risk-adjusted)

    def __post_init__(self) -> None:
        self.floor_usd = risk_adjusted(self.probs, self.floors, self.search.risk)

    @property
    def deterministic(self) -> Hardware | None:
        return self.own[-1].hardware

    @property
    def gap(self) -> float:
        """How far the purchase found may be above the best one (relative; 1 with none found)."""
        score = None if self.hardware is None else self.search.score(self.hardware)
        if score is None or score <= 0:
            return 1.0
        return max(0.0, (score - self.floor_usd) / score)


def decompose(run: Mapper, work: Work, probabilities: list[float], risk: Any) -> Decomposed:
    """Steps 1-4 of the module's description; the caller reports, or goes on with the joint model."""
    n = len(probabilities)
    own = run(own_optimum, [(work, i, i == n) for i in range(n + 1)])
    servable = [i for i in range(n) if own[i].hardware is not None]
    if not servable:
        raise InputError("no scenario can be served by any purchase", key="scenarios")
    mass = sum(probabilities[i] for i in servable)
    search = Search(run, work, servable, [probabilities[i] / mass for i in servable], risk)
    purchases = [h for h in (own[i].hardware for i in [*servable, n]) if h is not None]
    search.evaluate([*purchases, largest(purchases)])
    floors = [own[i].floor_usd or 0.0 for i in servable]
    return Decomposed(own, servable, search.probs, search, search.improve(), floors)


def new_work(base: LoadedProblem, overrides: list[dict[str, Any]], time_limit_s: float | None) -> Work:
    return Work(uuid.uuid4().hex, base, tuple(overrides), time_limit_s)


def forget(work: Work) -> None:
    """Drop this run's contexts (the parent's own, when jobs ran here)."""
    for key in [k for k in _contexts if k[0] == work.token]:
        del _contexts[key]
