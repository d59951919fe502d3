"""A service's replicas behind its router, replaying its traffic.

Each request picks a replica kind by its bucket's route shares (a seeded draw), then, within
the kind, the replica with the fewest outstanding requests at that moment (ties: the lowest
index). Replicas run lazily: one is advanced only as far as the router needs to see it, so
a decode-only stretch stays one priced array however many arrivals pass by on other replicas.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from planner.perf.engine import Engine
from planner.simulate.replica import Replica, Requests
from planner.simulate.traffic import Traffic


@dataclass(frozen=True)
class Kind:
    """Replicas of one kind: their engine and how many there are."""

    engine: Engine
    count: int


@dataclass(frozen=True)
class Outcome:
    """Per request, seconds: when it was sent, its first token and its last; its replica kind."""

    send_s: np.ndarray
    first_s: np.ndarray
    finish_s: np.ndarray
    kind: np.ndarray


def route_kinds(traffic: Traffic, routes: Sequence[Sequence[float]], rng: np.random.Generator) -> np.ndarray:
    """Replica kind of each request: ``routes[bucket][kind]`` is the bucket's share on that kind."""
    table = np.cumsum(np.asarray(routes, dtype=np.float64), axis=1)
    table /= table[:, -1:]
    draw = rng.random(len(traffic))
    kinds = np.empty(len(traffic), dtype=np.int64)
    for bucket in range(table.shape[0]):
        mine = traffic.bucket == bucket
        kinds[mine] = np.searchsorted(table[bucket], draw[mine], side="right")
    return np.minimum(kinds, table.shape[1] - 1)


def replay(kinds: Sequence[Kind], traffic: Traffic, kind_of: np.ndarray, delay_s: float = 0.0) -> Outcome:
    """Send every request through the router; ``delay_s``: fixed time before the engine sees
    it (API server, tokenizer)."""
    requests = Requests(traffic.input_tokens.tolist(), traffic.output_tokens.tolist())
    pools = [[Replica(k.engine, requests) for _ in range(k.count)] for k in kinds]
    arrivals = traffic.send_s + delay_s
    for rid, (t, kind) in enumerate(zip(arrivals.tolist(), kind_of.tolist(), strict=True)):
        pool = pools[kind]
        best, fewest = pool[0], math.inf
        for r in pool:
            if t > r.safe:
                r.advance(t)
            n = r.assigned - r.finished + (r.recent if r.clock > t else 0)  # Replica.outstanding, inlined
            if n < fewest:
                best, fewest = r, n
        best.add(rid, t)
    for pool in pools:
        for r in pool:
            r.advance(math.inf)
    return Outcome(traffic.send_s, np.array(requests.first), np.array(requests.finish), kind_of)
