"""A service's replicas behind its router, replaying its traffic.

Each request picks a replica kind by its bucket's route shares (a seeded draw), then, within
the kind, by default a replica drawn alike (``random``: each replica then sees Poisson
arrivals, the load the optimiser plans on), or the replica with the fewest outstanding
requests at that moment (ties: the lowest index), or ``round-robin`` (the next replica of the
kind in turn: smoother than Poisson, so its tails are shorter than planned). (Fewest
outstanding sends a burst of arrivals to the one replica that just finished requests, where
their prompts queue behind each other: its TTFT tail is longer than round robin's.) Replicas
run lazily: one is advanced only as far as the router needs to see it, so
a decode-only stretch stays one priced array however many arrivals pass by on other replicas.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from planner.perf.engine import Engine
from planner.simulate.replica import DecodeTimes, Replica, Requests
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


ROUTERS = ("random", "least-outstanding", "round-robin")


def replay(
    kinds: Sequence[Kind],
    traffic: Traffic,
    kind_of: np.ndarray,
    delay_s: float = 0.0,
    router: str = "random",
    rng: np.random.Generator | None = None,
    workers: int = 1,
) -> Outcome:
    """Send every request through the router; ``delay_s``: fixed time before the engine sees
    it (API server, tokenizer). ``workers``: processes the ``random`` router's replicas are
    replayed in (the same numbers however many)."""
    if router not in ROUTERS:
        raise ValueError(f"unknown router {router!r}")
    if router == "random":  # each request to a replica of its kind drawn alike: Poisson per replica
        from planner.executors import started_map

        jobs = random_replay_jobs(kinds, traffic, kind_of, delay_s, rng or np.random.default_rng(0), workers)
        with started_map(replay_alone, jobs, len(jobs)) as collect:
            first, finish = gather(len(traffic.send_s), collect())
        return Outcome(traffic.send_s, first, finish, kind_of)
    requests, arrivals = _requests(traffic, delay_s)
    pools = [_Pool([Replica(k.engine, requests, decode_times(k.engine)) for _ in range(k.count)]) for k in kinds]
    if router == "round-robin":
        turn = [0] * len(pools)
        for rid, (t, kind) in enumerate(zip(arrivals.tolist(), kind_of.tolist(), strict=True)):
            pool = pools[kind].replicas
            r = pool[turn[kind]]
            turn[kind] = (turn[kind] + 1) % len(pool)
            r.advance(t)
            r.add(rid, t)
    else:
        for rid, (t, kind) in enumerate(zip(arrivals.tolist(), kind_of.tolist(), strict=True)):
            pools[kind].send(rid, t)
    for pool in pools:
        for r in pool.replicas:
            r.advance(math.inf)
    return Outcome(traffic.send_s, np.array(requests.first), np.array(requests.finish), kind_of)


def random_replay_jobs(
    kinds: Sequence[Kind], traffic: Traffic, kind_of: np.ndarray, delay_s: float, rng: np.random.Generator, parts: int
) -> list[ReplayJob]:
    """``replay``'s work under the ``random`` router (the same draws from ``rng``), as at most
    ``parts`` jobs of whole replicas, to run anywhere (``replay_alone``) and ``gather``."""
    requests, arrivals = _requests(traffic, delay_s)
    return _replay_jobs(kinds, requests, arrivals, kind_of, rng.random(len(arrivals)), parts)


def _requests(traffic: Traffic, delay_s: float) -> tuple[Requests, np.ndarray]:
    """The requests as the replicas read them, and when each reaches the engine."""
    cached = None if traffic.cached is None else traffic.cached.tolist()
    return Requests(traffic.input_tokens.tolist(), traffic.output_tokens.tolist(), cached), traffic.send_s + delay_s


def gather(count: int, done: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """First and last token times of ``count`` requests from their jobs' ``replay_alone``."""
    first, finish = np.full(count, np.nan), np.full(count, np.nan)
    for rids, got_first, got_finish in done:
        first[rids], finish[rids] = got_first, got_finish
    return first, finish


ReplayJob = tuple[list[Engine], list[np.ndarray], Requests, np.ndarray]


def _replay_jobs(
    kinds: Sequence[Kind],
    requests: Requests,
    arrivals: np.ndarray,
    kind_of: np.ndarray,
    draw: np.ndarray,
    parts: int,
) -> list[ReplayJob]:
    """The random router's replicas never look at each other, so each replays its own requests
    alone: replicas in at most ``parts`` jobs of about equal requests (``replay``'s ``workers``
    processes, or finer for jobs shared out as they are taken: ``simulate.speculate``)."""
    counts = np.array([k.count for k in kinds], dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum(counts)[:-1]))
    size = counts[kind_of]
    replica = offsets[kind_of] + np.minimum((draw * size).astype(np.int64), size - 1)
    order = np.argsort(replica, kind="stable")
    ends = np.searchsorted(replica[order], np.arange(int(counts.sum()) + 1))
    own = [order[ends[i] : ends[i + 1]] for i in range(int(counts.sum()))]
    engines = [k.engine for k in kinds for _ in range(k.count)]
    groups = _balanced([len(rids) for rids in own], parts)
    return [([engines[i] for i in g], [own[i] for i in g], requests, arrivals) for g in groups]


def _balanced(sizes: list[int], workers: int) -> list[list[int]]:
    """Indices of ``sizes`` in at most ``workers`` groups of about equal sum (largest first)."""
    groups: list[list[int]] = [[] for _ in range(max(1, min(workers, len(sizes))))]
    load = [0] * len(groups)
    for i in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        g = load.index(min(load))
        groups[g].append(i)
        load[g] += sizes[i]
    return [g for g in groups if g]


# Decode-only iterations' times by engine, for the process: the replicas of a kind share them, and
# so do the jobs one process replays in turn (simulate.speculate's are of one replica each: startup's 8
# took 0.35 s with a table each, 0.315 s sharing one). The engine is kept with its table, so its id
# is not reused; a few engines' at most (a table grows to DecodeTimes.MAX_BLOCKS).
_TABLES: dict[int, tuple[Engine, DecodeTimes]] = {}
_TABLES_KEPT = 8


def decode_times(engine: Engine) -> DecodeTimes:
    kept = _TABLES.get(id(engine))
    if kept is not None and kept[0] is engine:
        return kept[1]
    if len(_TABLES) >= _TABLES_KEPT:
        _TABLES.clear()
    table = DecodeTimes(engine)
    _TABLES[id(engine)] = (engine, table)
    return table


def replay_alone(job: ReplayJob) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Replicas each replaying their own requests: their ids and first and last token times."""
    engines, owned, requests, arrivals = job
    times = arrivals.tolist()
    for engine, rids in zip(engines, owned, strict=True):
        r = Replica(engine, requests, decode_times(engine))
        for rid in rids.tolist():
            r.advance(times[rid])
            r.add(rid, times[rid])
        r.advance(math.inf)
    mine = np.concatenate(owned) if owned else np.zeros(0, dtype=np.int64)
    return mine, np.array(requests.first)[mine], np.array(requests.finish)[mine]


class _Pool:
    """The replicas of one kind and what the router knows of them.

    ``outstanding[i]`` is exact at the time of the last request sent. A replica only changes
    when time passes its ``safe`` (then it is advanced) or when requests it finished at the
    end of an iteration in progress become finished (then it is counted again); both are
    events on one heap, so a request touches only the replicas that changed since the last.
    """

    def __init__(self, replicas: list[Replica]) -> None:
        self.replicas = replicas
        self.outstanding = [0] * len(replicas)
        self.events: list[tuple[float, int, int]] = []  # (time, 0 count again at | 1 advance after, replica)
        self.queued = [math.inf] * len(replicas)  # the `safe` each replica has on the heap

    def send(self, rid: int, t: float) -> None:
        events, queued, replicas = self.events, self.queued, self.replicas
        while events:
            when, advance, i = events[0]
            if when > t or (when == t and advance):
                break
            heapq.heappop(events)
            if advance:
                if when != queued[i]:
                    continue  # superseded
                queued[i] = math.inf
            r = replicas[i]
            if t > r.safe:
                r.advance(t)
            self._refresh(i, t)
        out = self.outstanding
        i = out.index(min(out))  # fewest outstanding, lowest index
        replicas[i].add(rid, t)
        self._refresh(i, t)

    def _refresh(self, i: int, t: float) -> None:
        r = self.replicas[i]
        ending = r.recent if r.clock > t else 0  # finishing at the end of an iteration in progress
        self.outstanding[i] = r.assigned - r.finished + ending
        if ending:
            heapq.heappush(self.events, (r.clock, 0, i))
        if r.safe != self.queued[i] and r.safe < math.inf:
            self.queued[i] = r.safe
            heapq.heappush(self.events, (r.safe, 1, i))
