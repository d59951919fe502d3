"""A closed loop of N clients on one replica: how serving benchmarks measure.

The InferenceMAX protocol (what ``planner estimate inference --concurrency N`` models): N
clients start together, ``waves x N`` requests in all, each client sends its next request
when its previous one finishes, prompt and output lengths uniform integers in
``[low x L, L]``.
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from planner.perf.engine import Engine
from planner.simulate.fleet import Outcome
from planner.simulate.replica import Replica, Requests
from planner.simulate.traffic import uniform_lengths


def closed_loop(
    engine: Engine,
    clients: int,
    input_tokens: int,
    output_tokens: int,
    waves: int = 10,
    low: float = 0.8,
    seed: int = 0,
    delay_s: float = 0.0,
) -> Outcome:
    """Every request's send, first-token and finish times; ``delay_s`` before the engine sees one."""
    if clients < 1 or waves < 1:
        raise ValueError("a closed loop needs at least one client and one wave")
    n = clients * waves
    rng = np.random.default_rng(seed)
    inputs = uniform_lengths(input_tokens, low, n, rng)
    outputs = uniform_lengths(output_tokens, low, n, rng)
    requests = Requests(inputs.tolist(), outputs.tolist())
    replica = Replica(engine, requests)
    send = [math.nan] * n
    pending = [(0.0, rid) for rid in range(clients)]  # (send time, request id), in send order
    for _, rid in pending:
        send[rid] = 0.0
    sent = clients
    while pending or replica.busy():
        t = pending[0][0] + delay_s if pending else math.inf
        done = replica.advance(t, stop_at_finish=True)
        if done:  # each finished request frees its client, who sends the next at once
            for _ in done:
                if sent < n:
                    send[sent] = replica.clock
                    heapq.heappush(pending, (replica.clock, sent))
                    sent += 1
            continue
        if not pending:
            break
        _, rid = heapq.heappop(pending)
        replica.add(rid, t)
    return Outcome(np.array(send), np.array(requests.first), np.array(requests.finish), np.zeros(n, dtype=np.int64))
