"""Traffic for the simulator: when requests are sent and how large they are.

- Poisson arrivals at a rate (exponential gaps, a seeded ``numpy`` Generator);
- sizes fixed, drawn from a request-size mix (buckets with shares), or replayed from a
  trace of observed requests (a mix's CSV: rows in file order, from the start again when
  more requests are asked for than it has);
- a closed loop of N clients (``planner.simulate.closed_loop``) draws its sizes here too:
  uniform integers in ``[low x L, L]``, as the InferenceMAX benchmark does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Bucket:
    """One request size of a service's traffic and its share of the requests."""

    label: str
    input_tokens: int
    output_tokens: int
    share: float


@dataclass(frozen=True)
class Traffic:
    """Requests in the order they are sent: send time (s), sizes and bucket index."""

    send_s: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    bucket: np.ndarray
    cached: np.ndarray | None = None  # prompt tokens found in the prefix cache (None: none)

    def __len__(self) -> int:
        return len(self.send_s)


def poisson_times(rate_per_s: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """Send times of ``n`` Poisson arrivals at ``rate_per_s``, the first after one gap."""
    if rate_per_s <= 0:
        raise ValueError("a Poisson rate must be positive")
    return np.cumsum(rng.exponential(1.0 / rate_per_s, n))


def from_buckets(buckets: Sequence[Bucket], n: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """(input, output, bucket index) of ``n`` requests drawn by the buckets' shares."""
    shares = np.array([b.share for b in buckets], dtype=np.float64)
    index = rng.choice(len(buckets), size=n, p=shares / shares.sum())
    inputs = np.array([b.input_tokens for b in buckets], dtype=np.int64)[index]
    outputs = np.array([b.output_tokens for b in buckets], dtype=np.int64)[index]
    return inputs, outputs, index.astype(np.int64)


def from_trace(rows: Sequence[tuple[int, int]], bucket_of: Sequence[int], n: int) -> tuple[np.ndarray, ...]:
    """(input, output, bucket index) of ``n`` requests replayed from observed ``rows`` in order."""
    take = np.arange(n) % len(rows)
    table = np.array(rows, dtype=np.int64).reshape(-1, 2)
    return table[take, 0], table[take, 1], np.asarray(bucket_of, dtype=np.int64)[take]


def poisson_traffic(
    rate_per_s: float,
    n: int,
    rng: np.random.Generator,
    buckets: Sequence[Bucket],
    trace: tuple[Sequence[tuple[int, int]], Sequence[int]] | None = None,
) -> Traffic:
    """``n`` Poisson requests at ``rate_per_s``, sized by ``trace`` (rows and their bucket
    indices) when given, else drawn from ``buckets`` (one bucket: every request that size)."""
    times = poisson_times(rate_per_s, n, rng)
    inputs, outputs, index = from_trace(*trace, n) if trace is not None else from_buckets(buckets, n, rng)
    return Traffic(times, inputs, outputs, index)


def with_prefix_hits(traffic: Traffic, shared_tokens: int, hit_rate: float, rng: np.random.Generator) -> Traffic:
    """Each request's prompt hits the prefix cache with probability ``hit_rate`` (prompts no
    longer than the prefix never do): a hit has ``shared_tokens`` of its prompt cached."""
    if hit_rate <= 0 or shared_tokens <= 0:
        return traffic
    hits = (rng.random(len(traffic)) < hit_rate) & (traffic.input_tokens > shared_tokens)
    cached = np.where(hits, shared_tokens, 0).astype(np.int64)
    return Traffic(traffic.send_s, traffic.input_tokens, traffic.output_tokens, traffic.bucket, cached)


def uniform_lengths(length: int, low: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` integers uniform in ``[int(low x length), length]`` (at least 1), as vLLM's benchmark draws them."""
    lo = max(1, min(length, int(low * length)))
    return rng.integers(lo, length + 1, size=n, dtype=np.int64)
