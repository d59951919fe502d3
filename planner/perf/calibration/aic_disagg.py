"""The disaggregated model (``planner.perf.disagg``) against aiconfigurator's ``disagg`` rows.

``aic_silicon.csv`` holds 1,592 rows measured on separate prefill and decode workers (their
counts and parallelism in the ``prefill_*`` and ``decode_*`` columns) with a closed loop of N
clients. Each row becomes a ``DisaggCase`` (the mapping of ``aic_mapping`` for model, GPU,
precision and concurrency, applied to each worker kind), and its mean TTFT and TPOT are
predicted by solving the closed loop with ``disagg.py``'s functions (``closed_loop``):

- a request cycles through prefill (spread evenly over the prefill workers), the KV transfer,
  and decode (spread evenly over the decode workers); throughput ``X = N / cycle`` with
  ``cycle = TTFT + (osl - 1) x TPOT`` (Little, no think time);
- TTFT = prefill wait + ``prefill_work(...).latency_s`` + ``transfer_s(kv_gb_per_request)``.
  The wait is the M/D/1 mean (``queueing.mg1_wait_mean``) at rate ``X / prefill workers`` with
  ``prefill_work(...).service_s`` as the service, bounded: a prompt has at most ``N - 1``
  others ahead of it, ``(N - 1) / prefill workers`` service times on its worker;
- each decode worker holds ``(N - those in prefill or transfer) / decode workers`` sequences:
  ``DecodeLoad.batch(X / decode workers)`` (Little), TPOT = ``DecodeLoad.step_s(batch)``;
- the fixed point: the clients in prefill and transfer (``X x TTFT``) plus those decoding
  (``decode workers x batch``) add up to N. Both rise with X, so X is found by bisection
  below the slower phase's ceiling (``1 / service_s`` per prefill worker,
  ``DecodeLoad.ceiling()`` per decode worker). When even that ceiling leaves clients over, the
  bottleneck phase runs at its ceiling and the rest wait in front of it: in the prefill queue
  (TTFT grows) or for a decode slot (a sequence whose KV cache does not fit waits; the wait is
  spread over its output tokens, so TPOT grows).

Nothing is fitted per row: the catalog's efficiencies as they are.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from planner.catalog import Catalog, load_catalog
from planner.perf.calibration.aic import load_rows

# Scale-out NIC ports per GPU, Gb/s, where the KV cache crosses servers: ConnectX-7 (400 Gb/s)
# on HGX H100/H200/B200 (DGX B200 user guide: 8x ConnectX-7) and on GB200 NVL72 (4x ConnectX-7
# per 4-GPU tray); ConnectX-8 (800 Gb/s) on B300 and GB300 boards (servers.yaml notes).
from planner.perf.calibration.aic_disagg_mapping import RULES, DisaggCase, Worker, query_for, to_case
from planner.perf.calibration.aic_mapping import (
    BANDS,
    gpu_order,
    measured_ms,
)
from planner.perf.calibration.mapping import Skip
from planner.perf.disagg import DecodeLoad, PrefillWork, kv_gb_per_request, prefill_work, transfer_s
from planner.perf.engine import Engine
from planner.perf.inference import engine_for
from planner.perf.queueing import mg1_wait_mean

__all__ = ["RULES", "DisaggCase", "Worker", "query_for", "to_case"]


# --- the closed loop -------------------------------------------------------------------------


@dataclass(frozen=True)
class LoopAnswer:
    """The closed loop's fixed point: mean TTFT and TPOT (s), and what produced them."""

    ttft_s: float
    tpot_s: float
    requests_per_s: float
    prefill_wait_s: float
    prefill_utilisation: float
    decode_batch: float  # sequences decoding per decode worker (at most what its cache holds)
    bound: str  # "" | "prefill" | "decode": the phase at its ceiling, the rest queued before it


def prefill_wait_s(rate: float, work: PrefillWork, clients: int, workers: int) -> float:
    """Mean wait of a prompt on one prefill worker at ``rate``: M/D/1, at most the service of
    the ``clients - 1`` other prompts shared by the ``workers``; inf at or above saturation."""
    if rate * work.service_s >= 1:
        return math.inf
    bound = max(0, clients - 1) / workers * work.service_s
    return min(mg1_wait_mean(rate, [(1.0, work.service_s)], cap=1.0 - 1e-12), bound)


def closed_loop(
    clients: int, prefill: Worker, decode: Worker, work: PrefillWork, kv_s: float, load: DecodeLoad
) -> LoopAnswer:
    """N clients cycling through prefill (``prefill.count`` workers), the KV transfer and decode
    (``decode.count`` workers); see the module docstring."""
    if load.steps == 0 or load.max_running < 1:
        raise ValueError("nothing to decode, or no sequence fits a decode worker")
    x_prefill = prefill.count / work.service_s
    x_decode = decode.count * load.ceiling()
    top = min(x_prefill, x_decode)

    def wait(x: float) -> float:
        return prefill_wait_s(x / prefill.count, work, clients, prefill.count)

    def batch(x: float) -> float:
        b = load.batch(x / decode.count)
        return float(load.max_running) if b is None else b

    def held(x: float) -> float:  # clients in prefill and transfer, plus those decoding
        return x * (wait(x) + work.latency_s + kv_s) + decode.count * batch(x)

    below = top * (1 - 1e-9)
    if held(below) < clients:  # the slower phase at its ceiling, the other clients queued before it
        x = top
        if x_prefill <= x_decode:
            b = batch(x)
            ttft = (clients - decode.count * b) / x  # Little over prefill and transfer
            tpot = load.step_s(b)
            util, bound = 1.0, "prefill"
        else:
            b = float(load.max_running)
            ttft = wait(x) + work.latency_s + kv_s
            # the decoding and the waiting for a slot, over the output tokens (Little)
            tpot = max((clients - x * ttft) / x / load.steps, load.step_s(b))
            util, bound = x / prefill.count * work.service_s, "decode"
        w = ttft - work.latency_s - kv_s
        return LoopAnswer(ttft, tpot, x, w, util, b, bound)
    lo, hi = 0.0, below
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if held(mid) < clients else (lo, mid)
        if hi - lo <= 1e-12 * hi:
            break
    x = (lo + hi) / 2
    b = batch(x)
    w = wait(x)
    return LoopAnswer(
        ttft_s=w + work.latency_s + kv_s,
        tpot_s=load.step_s(b),
        requests_per_s=x,
        prefill_wait_s=w,
        prefill_utilisation=x / prefill.count * work.service_s,
        decode_batch=b,
        bound="",
    )


@dataclass(frozen=True)
class Engines:
    prefill: Engine
    decode: Engine
    work: PrefillWork
    kv_s: float
    load: DecodeLoad


def engines(case: DisaggCase, catalog: Catalog) -> Engines | str:
    """Both workers' engines and the pieces of the loop, or the reason a worker cannot run."""
    eff = catalog.efficiency
    gen, serving = eff.generations[catalog.gpus[case.gpu].generation], eff.serving
    qp, qd = query_for(case, case.prefill, catalog), query_for(case, case.decode, catalog)
    ep, ed = engine_for(qp, gen, serving), engine_for(qd, gen, serving)
    if ep is None:
        return "planner: prefill worker: weights and one request's KV cache do not fit"
    if ed is None:
        return "planner: decode worker: weights and one request's KV cache do not fit"
    load = DecodeLoad(ed, case.input_tokens, case.output_tokens)
    if load.steps == 0:
        return "planner: one output token: nothing to decode"
    if load.max_running < 1:
        return "planner: decode worker: no sequence's KV cache fits beside the weights"
    kv_s = transfer_s(kv_gb_per_request(qp, serving), case.kv_link, serving)
    return Engines(ep, ed, prefill_work(ep, case.input_tokens), kv_s, load)


def predict(case: DisaggCase, catalog: Catalog | None = None) -> LoopAnswer | str:
    """The closed loop's answer for one case, or the reason it cannot be asked."""
    cat = catalog or load_catalog()
    parts = engines(case, cat)
    if isinstance(parts, str):
        return parts
    return closed_loop(case.concurrency, case.prefill, case.decode, parts.work, parts.kv_s, parts.load)


# --- results and summaries -----------------------------------------------------------------


@dataclass(frozen=True)
class DisaggResult:
    row_id: str
    case: DisaggCase
    backend: str
    row_precision: str
    measured_ttft_ms: float
    measured_tpot_ms: float
    ttft_ms: float
    tpot_ms: float
    prefill_wait_ms: float
    prefill_utilisation: float
    decode_batch: float
    bound: str

    @property
    def ttft_ratio(self) -> float:  # predicted / measured
        return self.ttft_ms / self.measured_ttft_ms

    @property
    def tpot_ratio(self) -> float:
        return self.tpot_ms / self.measured_tpot_ms

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "band": self.case.band, "ttft_ratio": self.ttft_ratio, "tpot_ratio": self.tpot_ratio}


@dataclass(frozen=True)
class DisaggSummary:
    """Median ratio and error ``exp(median |ln ratio|)`` of TTFT and TPOT over a group of rows."""

    model: str
    gpu: str
    band: str
    count: int
    ttft_ratio: float
    ttft_error: float
    tpot_ratio: float
    tpot_error: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def summarize(model: str, gpu: str, results: Sequence[DisaggResult], band: str = "all") -> DisaggSummary:
    def median(ratios: list[float]) -> tuple[float, float]:
        return statistics.median(ratios), math.exp(statistics.median(abs(math.log(x)) for x in ratios))

    ttft = median([r.ttft_ratio for r in results])
    tpot = median([r.tpot_ratio for r in results])
    return DisaggSummary(model, gpu, band, len(results), ttft[0], ttft[1], tpot[0], tpot[1])


@dataclass
class DisaggReport:
    source: Path
    rows: int = 0  # disagg rows read
    results: list[DisaggResult] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    notes: set[str] = field(default_factory=set)

    def overall(self) -> list[DisaggSummary]:
        return [summarize("all", "all", self.results)] if self.results else []

    def by_model_and_gpu(self) -> list[DisaggSummary]:
        out: list[DisaggSummary] = []
        for model in sorted({r.case.model for r in self.results}):
            mine = [r for r in self.results if r.case.model == model]
            for gpu in sorted({r.case.gpu for r in mine}, key=gpu_order):
                out.append(summarize(model, gpu, [r for r in mine if r.case.gpu == gpu]))
            out.append(summarize(model, "all", mine))
        return out

    def by_model_and_band(self) -> list[DisaggSummary]:
        out: list[DisaggSummary] = []
        for model in [*sorted({r.case.model for r in self.results}), "all"]:
            mine = [r for r in self.results if model in ("all", r.case.model)]
            for band, _, _ in BANDS:
                rows = [r for r in mine if r.case.band == band]
                if rows:
                    out.append(summarize(model, "all", rows, band=band))
        return out

    def by(self, name: str, key: Any) -> list[tuple[str, DisaggSummary]]:
        """Per value of ``key(result)`` (e.g. engine, KV link, bound), in sorted order."""
        groups: dict[str, list[DisaggResult]] = {}
        for r in self.results:
            groups.setdefault(str(key(r)), []).append(r)
        return [(k, summarize(name, k, groups[k])) for k in sorted(groups)]


def check(rows: Iterable[dict[str, str]], source: Path, catalog: Catalog | None = None) -> DisaggReport:
    """Every disagg row against the closed-loop model, or counted under the reason it is skipped
    (aggregated rows are not read: ``aic.check`` covers them)."""
    cat = catalog or load_catalog()
    report = DisaggReport(source=source)
    answers: dict[DisaggCase, LoopAnswer | str] = {}  # rows repeat cases
    for row in rows:
        if row["mode"].strip() != "disagg":
            continue
        report.rows += 1
        try:
            case, notes = to_case(row, cat)
        except Skip as why:
            report.skipped[str(why)] += 1
            continue
        if case not in answers:
            answers[case] = predict(case, cat)
        answer = answers[case]
        if isinstance(answer, str):
            report.skipped[answer] += 1
            continue
        report.notes.update(notes)
        ttft, tpot = measured_ms(row)
        report.results.append(
            DisaggResult(
                row_id=row["id"],
                case=case,
                backend=row["backend"],
                row_precision=row["precision"],
                measured_ttft_ms=ttft,
                measured_tpot_ms=tpot,
                ttft_ms=answer.ttft_s * 1e3,
                tpot_ms=answer.tpot_s * 1e3,
                prefill_wait_ms=answer.prefill_wait_s * 1e3,
                prefill_utilisation=answer.prefill_utilisation,
                decode_batch=answer.decode_batch,
                bound=answer.bound,
            )
        )
    return report


def run(path: Path, catalog: Catalog | None = None) -> DisaggReport:
    """Read the table at ``path`` and check every disagg row."""
    return check(load_rows(path), path, catalog)
