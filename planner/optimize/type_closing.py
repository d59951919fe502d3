"""Which GPU types the consolidated start keeps: a type is closed while its services lose less
by moving than the type costs.

Every owned GPU type costs ``finance.ops_usd_per_gpu_type_year`` over the horizon, whatever
its size. Each service's floor mix is the cheapest with every type open, so forty floors open
many types: on the benchmark fleet (``benchmarks/bench_large.py`` seed 11) nine, and the search
kept all nine from the start it was given ($0.75M of type charges; plan $15.32M at 60
deterministic seconds). The greedy of facility location again: close the type whose services,
each moved to its best mix on the types left, lose the least, while that loss is below the
charge. On seed 11 it keeps six types and the plan found from its start is $14.82M.

Each move is a service solved alone (``floors.service_floor``, memoised: the first round's are
the closing cuts' own solves), so the choice is deterministic; it orders the search only.
"""

from __future__ import annotations

from planner.optimize.built import Built, Counts, Floor, upper
from planner.optimize.floors import service_floor
from planner.optimize.type_floors import CLOSED_DET_S, mix_types, owned_type

MAX_SOLVES = 600  # services solved off some closed types, in all: bounds the work on a fleet of hundreds


def close_types(b: Built, floors: dict[str, Floor]) -> dict[str, Counts]:
    """Each floored service's replica counts on the types kept (its floor mix when it loses none)."""
    counts = {name: f.found[1] for name, f in floors.items() if f.found is not None}
    closed: set[str] = set()
    moves = _Moves(b, floors)
    while len(open_ := set().union(*(mix_types(b, floors[n], c) for n, c in counts.items()))) > 1:
        best: tuple[int, str, dict[str, Counts]] | None = None
        for gpu in sorted(open_):
            users = [n for n, c in counts.items() if gpu in mix_types(b, floors[n], c)]
            moved: dict[str, Counts] = {}
            for name in users:
                if moves.solves >= MAX_SOLVES:
                    return counts
                if (found := moves.off(name, closed | {gpu})) is not None:
                    moved[name] = found
            if len(moved) < len(users):
                continue  # some service has no mix without it: the type stays
            loss = sum(_cost(floors[n], c) - _cost(floors[n], counts[n]) for n, c in moved.items())
            if best is None or loss < best[0]:
                best = (loss, gpu, moved)
        if best is None or best[0] >= b.gpu_type_charge_usd:
            break
        closed.add(best[1])
        counts.update(best[2])
    return counts


class _Moves:
    """A service's best counts off some closed types, solved once per closed types it could use
    (a service asked again in a later round, with the same of its types closed, is not solved)."""

    def __init__(self, b: Built, floors: dict[str, Floor]) -> None:
        self.b, self.floors = b, floors
        self.solves = 0
        self._found: dict[tuple[str, frozenset[str]], Counts | None] = {}

    def off(self, name: str, closed: set[str]) -> Counts | None:
        f = self.floors[name]
        own = frozenset(o.pool.gpu for o, _ in f.reps if owned_type(self.b, o)) & closed
        if (name, own) not in self._found:
            self.solves += 1
            uppers = [0 if owned_type(self.b, o) and o.pool.gpu in own else upper(r) for o, r in f.reps]
            found = service_floor(f, name, uppers, CLOSED_DET_S) if any(uppers) else None
            self._found[name, own] = None if found is None else found[1]
        return self._found[name, own]


def _cost(f: Floor, counts: Counts) -> int:
    return sum(c * n for c, n in zip(f.costs, counts, strict=True))
