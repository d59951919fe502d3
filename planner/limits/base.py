"""What a limit family is: one declaration that the model, the report, the verifier,
the explanations and the diagnosis all read.

A *family* (``budget``, ``job:<name>:deadline``, ``stock:<gpu>``, ...) yields one
*limit* per thing it bounds. For each limit the family says

- where its value lives in the problem (``path``, so a script can move it),
- how the CP-SAT model enforces it (``add``),
- which quantity it bounds, read from ``Measured`` (``used``): the report reads it
  off the plan, the verifier off its own recomputation, so the two can be compared,
- the natural step that loosens it, and one purchase unit of slack (``tight``),
- whether moving it changes which deployment options exist (``prunes_options``:
  explanations then derive the options again),
- how a diagnosis relaxes it (``elastic``; ``required`` turns the minimal slack in
  model units back into the problem's units).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from planner.catalog import Catalog
    from planner.optimize.built import Built
    from planner.schema.plan import Plan
    from planner.schema.problem import Problem


@dataclass(frozen=True)
class Limit:
    name: str  # stable: "budget", "job:pretrain:deadline", "stock:H100-SXM"
    path: str | None  # dotted problem path of its value (None: not in the problem file)
    value: float  # the limit, in the problem's units
    subject: str = ""  # the job, service or GPU it is about
    elastic: bool = False  # a diagnosis may relax it


@dataclass
class Measured:
    """The quantities limits bound, as one plan has them (or as the verifier recomputes them)."""

    capex_usd: float = 0.0
    facility_kw: float = 0.0  # the peak year's IT power x PUE
    racks: int = 0
    max_rack_kw: float = 0.0
    max_rack_units: int = 0
    job_end_day: dict[str, float] = field(default_factory=dict)
    carried_rps: dict[str, float] = field(default_factory=dict)  # the tightest year's demand carried, spares down
    carried_margin_rps: dict[str, float] = field(default_factory=dict)  # that year's carried minus required
    required_rps: dict[str, float] = field(default_factory=dict)  # that year's demand
    smallest_replica_rps: dict[str, float] = field(default_factory=dict)  # that year's smallest replica kind
    ttft_p99_ms: dict[str, float] = field(default_factory=dict)  # the slowest replica kind or route
    tpot_p99_ms: dict[str, float] = field(default_factory=dict)
    gpus_in_busiest_year: dict[str, int] = field(default_factory=dict)  # per GPU: the purchase year buying most
    gpu_types: int = 0
    server_price_usd: float = 0.0  # the dearest server bought: one purchase unit of money
    server_facility_kw: float = 0.0  # the most power-hungry server bought, x PUE
    extra: dict[str, float] = field(default_factory=dict)  # quantities of families added later


class Family:
    """A limit family. Subclasses override what differs; the defaults suit a cap with no
    model constraint of its own (enforced when options are built) and no elastic form."""

    pattern: str = ""  # the name pattern, for docs: "job:<name>:deadline"
    unit: str = ""
    at_least: bool = False  # a floor: used >= limit
    prunes_options: bool = True  # moving it can change the options (the safe default)

    def limits(self, problem: Problem, catalog: Catalog) -> list[Limit]:
        raise NotImplementedError

    def used(self, m: Measured, limit: Limit) -> float:
        raise NotImplementedError

    def read(self, problem: Problem, plan: Plan, m: Measured) -> None:
        """Put the quantity this family bounds into ``m.extra`` when ``Measured`` has no field
        for it, read off the plan (the limits report)."""

    def recompute(self, problem: Problem, catalog: Catalog, plan: Plan, m: Measured) -> None:
        """The verifier's own figure for an ``m.extra`` quantity, from the catalog and the plan's
        rows rather than its totals. By default the plan's own reading."""
        self.read(problem, plan, m)

    def step(self, limit: Limit, m: Measured, catalog: Catalog) -> float:
        """The signed move of the value at ``path`` that loosens the limit."""
        return round(limit.value * 0.1, 6)

    def purchase_unit(self, limit: Limit, m: Measured, catalog: Catalog) -> float:
        """Slack below this is 'tight': one more unit of the smallest purchase would not fit."""
        return abs(self.step(limit, m, catalog))

    def add(self, b: Built, problem: Problem, catalog: Catalog, limit: Limit, slack: Any) -> None:
        """Add the limit to the model; ``slack`` (0 unless relaxed) loosens it in model units."""

    def slack_bound(self, limit: Limit) -> int:
        """The most a diagnosis may relax it, in model units."""
        return 10**9

    def required(self, limit: Limit, slack: int) -> float:
        """The limit value a minimal ``slack`` (model units) implies, in problem units."""
        return limit.value + slack

    def scale(self, limit: Limit) -> float:
        """Model units per problem unit: a combined fix weighs each move relative to its limit."""
        return 1.0

    def sentence(self, limit: Limit, required: float) -> str:
        return f"move {limit.path} from {limit.value:g} to {required:g}"
