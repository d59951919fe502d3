"""The analytic p99s at the load the simulation replays: what the simulator is checked against.

The plan sizes each replica kind at the largest rate whose p99s meet the targets; at the
planned demand the kinds run below that. Here the load model (``planner.perf.load_mix``) is
asked at the demand the plan routes to each kind, with the request sizes each kind really
gets (a mix's buckets share replicas), and the service's p99 is the quantile of all its
requests across kinds and buckets (``queueing.mixture_quantile``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from planner.perf.load_mix import MixState, RequestClass, mix_state, running_limit
from planner.perf.queueing import QUANTILE_LEVELS, mixture_quantile
from planner.simulate.fleet import Kind
from planner.simulate.traffic import Bucket

P99 = tuple[float, float]  # (TTFT, TPOT), ms; inf when a kind cannot keep up


def analytic_p99s(
    kinds: Sequence[Kind], buckets: Sequence[Bucket], routes: Sequence[Sequence[float]], rate_per_s: float
) -> tuple[P99, list[P99]]:
    """The service's p99s and each bucket's, at ``rate_per_s`` routed by ``routes[bucket][kind]``."""
    routes = [[r / (sum(row) or 1.0) for r in row] for row in routes]  # shares, whatever the weights
    states: list[tuple[MixState | None, list[int]]] = []
    for k, kind in enumerate(kinds):
        mine = [j for j in range(len(buckets)) if buckets[j].share * routes[j][k] > 0]
        load = sum(buckets[j].share * routes[j][k] for j in mine)
        classes = [
            RequestClass(buckets[j].input_tokens, buckets[j].output_tokens, buckets[j].share * routes[j][k])
            for j in mine
        ]
        if not classes:
            states.append((None, []))
            continue
        running = running_limit(kind.engine, classes)
        states.append((mix_state(kind.engine, classes, rate_per_s * load / kind.count, running), mine))

    def groups(which: str, only: int | None) -> list[tuple[float, list[float]]]:
        out: list[tuple[float, list[float]]] = []
        for k, (state, mine) in enumerate(states):
            for i, j in enumerate(mine):
                if only is not None and j != only:
                    continue
                out.append((buckets[j].share * routes[j][k], _quantiles(state, i, which)))
        return out

    def p99(only: int | None) -> P99:
        return 1e3 * mixture_quantile(groups("ttft", only), 0.99), 1e3 * mixture_quantile(groups("tpot", only), 0.99)

    return p99(None), [p99(j) for j in range(len(buckets))]


def _quantiles(state: MixState | None, i: int, which: str) -> list[float]:
    if state is None:
        return [math.inf] * len(QUANTILE_LEVELS)
    of = state.ttft_quantile_s if which == "ttft" else state.tpot_quantile_s
    return [of(i, level) for level in QUANTILE_LEVELS]
