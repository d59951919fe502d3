"""Latency figures of simulated requests: percentiles in ms and the share within target.

TTFT = first token - sent; TPOT = (last token - first token) / (output - 1), for requests
of two tokens or more (a one-token answer has no TPOT); end-to-end = last token - sent.
A request meets its targets when its TTFT and its TPOT (if it has one) are within them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner import units as u

PERCENTILES = (50, 90, 99)


@dataclass(frozen=True)
class Latencies:
    """Per request, seconds (``tpot_s`` is NaN where undefined)."""

    ttft_s: np.ndarray
    tpot_s: np.ndarray
    e2e_s: np.ndarray

    @classmethod
    def of(cls, send_s: np.ndarray, first_s: np.ndarray, finish_s: np.ndarray, output: np.ndarray) -> Latencies:
        steps = output.astype(np.float64) - 1
        with np.errstate(divide="ignore", invalid="ignore"):
            tpot = np.where(steps > 0, (finish_s - first_s) / np.maximum(steps, 1), np.nan)
        return cls(first_s - send_s, tpot, finish_s - send_s)

    def subset(self, mask: np.ndarray) -> Latencies:
        return Latencies(self.ttft_s[mask], self.tpot_s[mask], self.e2e_s[mask])

    def within(self, ttft_ms: float | None, tpot_ms: float | None) -> np.ndarray:
        """Per request: both targets met (a target of None always is)."""
        ok = np.ones(len(self.ttft_s), dtype=bool)
        if ttft_ms is not None:
            ok &= self.ttft_s <= ttft_ms / 1e3
        if tpot_ms is not None:
            ok &= np.isnan(self.tpot_s) | (self.tpot_s <= tpot_ms / 1e3)
        return ok

    def summary(self, ttft_ms: float | None, tpot_ms: float | None) -> dict[str, float | int | None]:
        """``requests``, ``{ttft,tpot,e2e}_p{50,90,99}_ms`` and ``slo_attainment``."""
        row: dict[str, float | int | None] = {"requests": len(self.ttft_s)}
        for name, values in (("ttft", self.ttft_s), ("tpot", self.tpot_s), ("e2e", self.e2e_s)):
            defined = values[~np.isnan(values)]
            for p in PERCENTILES:
                row[f"{name}_p{p}_ms"] = round(u.ms(float(np.percentile(defined, p))), 3) if len(defined) else None
        row["slo_attainment"] = round(float(self.within(ttft_ms, tpot_ms).mean()), 5) if len(self.ttft_s) else None
        return row
