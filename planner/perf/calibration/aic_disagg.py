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

import datetime
import math
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from planner.catalog import Catalog, load_catalog
from planner.perf.calibration.aic import load_rows
from planner.perf.calibration.aic_mapping import (
    BANDS,
    SYSTEMS,
    _int,
    _precision,
    band_of,
    catalog_model,
    concurrency_of,
    gpu_order,
    measured_ms,
)
from planner.perf.calibration.aic_render import Table, _aligned, _md_row
from planner.perf.calibration.mapping import Skip, chassis_for
from planner.perf.disagg import DecodeLoad, KvLink, PrefillWork, kv_gb_per_request, prefill_work, transfer_s
from planner.perf.engine import Engine
from planner.perf.inference import engine_for
from planner.perf.inference_types import InferenceQuery
from planner.perf.links import link_for, nvlink_domain
from planner.perf.queueing import mg1_wait_mean
from planner.perf.shapes import shape_of

# Scale-out NIC ports per GPU, Gb/s, where the KV cache crosses servers: ConnectX-7 (400 Gb/s)
# on HGX H100/H200/B200 (DGX B200 user guide: 8x ConnectX-7) and on GB200 NVL72 (4x ConnectX-7
# per 4-GPU tray); ConnectX-8 (800 Gb/s) on B300 and GB300 boards (servers.yaml notes).
NIC_GBIT_PER_GPU = {"H100-SXM": 400, "H200-SXM": 400, "B200": 400, "GB200": 400, "B300": 800, "GB300": 800}
NIC_FABRIC = "ib-ndr"  # the catalog fabric whose one-way latency the NIC path takes

RULES = """
Each `disagg` row becomes two worker kinds and a closed loop of N clients.

- Model, GPU, precision and N (`silicon_concurrency`) as for the aggregated rows
(`aic_mapping.py`): models not in the catalog (GLM-5) are skipped, never matched by likeness.
- Prefill worker: `prefill_tp_size` x `prefill_attention_dp_size` GPUs with attention data
parallelism `prefill_attention_dp_size`, `prefill_num_workers` of them; decode worker likewise
from the `decode_*` columns and `decode_num_workers`. `moe_tp_size`/`moe_ep_size` are not used
(the planner spreads the routed experts over the worker's GPUs). Rows without worker counts
are skipped (never assumed to be one), as are pipeline parallelism, a worker larger than one
catalog server (on 8-GPU HGX systems: 16 GPUs; on GB200/GB300 the 72-GPU NVL72 domain) and a
`tp_size` that does not divide the attention heads. Each worker gets the in-server link
`planner estimate` would give it (`links.link_for` on the fastest catalog chassis holding it).
- KV link: NVLink when every prefill and decode worker of the row fits one NVLink domain
(`gpu.nvlink_gb_per_s / 2` one way per GPU, as `links.link_for` takes it, with the catalog's
NVLink latency `serving.link_latency_us.nvlink`); otherwise the scale-out NIC of one GPU:
400 Gb/s (ConnectX-7) on H100, H200, B200 and GB200, 800 Gb/s (ConnectX-8) on B300 and GB300,
with the catalog's `ib-ndr` latency. In this table that is NVLink on every GB200/GB300 row (all
fit in 72 GPUs) and the NICs on every HGX row (none fits in 8). `transfer_s` applies
`serving.link_eff`.
- Rows the model answers "does not fit" (weights and one request's KV cache on a worker) are
skipped with that reason.
"""


@dataclass(frozen=True)
class Worker:
    """One worker kind of a row: ``count`` replicas of ``gpus`` GPUs, ``attention_dp`` groups."""

    gpus: int
    attention_dp: int
    count: int


@dataclass(frozen=True)
class DisaggCase:
    model: str
    gpu: str
    precision: str
    input_tokens: int
    output_tokens: int
    prefill: Worker
    decode: Worker
    concurrency: int
    kv_link: KvLink

    @property
    def band(self) -> str:
        return band_of(self.concurrency)


def _worker(row: dict[str, str], side: str, heads: int, gpu_id: str, catalog: Catalog) -> Worker:
    if not row[f"{side}_num_workers"].strip():
        raise Skip("prefill/decode worker counts not recorded")
    if _int(row[f"{side}_pp_size"] or "1", f"{side}_pp_size") > 1:
        raise Skip("pipeline parallelism not modelled")
    tp = _int(row[f"{side}_tp_size"], f"{side}_tp_size")
    dp = _int(row[f"{side}_attention_dp_size"] or "1", f"{side}_attention_dp_size")
    count = _int(row[f"{side}_num_workers"], f"{side}_num_workers")
    try:
        chassis_for(catalog, catalog.gpus[gpu_id], tp * dp)
    except Skip as why:
        raise Skip(f"{side} worker: {why}") from None
    if heads and heads % tp:
        raise Skip(f"{side} worker: tp_size does not divide the attention heads")
    return Worker(gpus=tp * dp, attention_dp=dp, count=count)


def kv_link_for(catalog: Catalog, gpu_id: str, prefill: Worker, decode: Worker) -> KvLink:
    """NVLink when all the row's workers fit one NVLink domain, else one GPU's scale-out NIC."""
    gpu = catalog.gpus[gpu_id]
    serving = catalog.efficiency.serving
    total = prefill.gpus * prefill.count + decode.gpus * decode.count
    chassis = chassis_for(catalog, gpu, max(prefill.gpus, decode.gpus))
    if gpu.nvlink_gb_per_s > 0 and total <= nvlink_domain(chassis, gpu):
        link = link_for(chassis, gpu, total)
        return KvLink(link.kind, link.gb_per_s_one_way, serving.link_latency_us.get(link.kind, 25.0))
    if gpu_id not in NIC_GBIT_PER_GPU:
        raise Skip(f"no scale-out NIC speed for {gpu_id}")
    return KvLink("nic", NIC_GBIT_PER_GPU[gpu_id] / 8, catalog.fabrics[NIC_FABRIC].latency_us)


def to_case(row: dict[str, str], catalog: Catalog) -> tuple[DisaggCase, list[str]]:
    """The planner's terms for a disagg row, and the mapping notes that applied; else ``Skip``."""
    if row["mode"].strip() != "disagg":
        raise Skip("not a disagg row")
    model_id, model_note = catalog_model(row["model_path"], catalog)
    system = row["system"].strip()
    if system not in SYSTEMS:
        raise Skip(f"system {system} not mapped")
    gpu_id = catalog.find_gpu_id(SYSTEMS[system])
    if gpu_id is None:
        raise Skip(f"catalog has no GPU {SYSTEMS[system]}")
    shape = shape_of(model_id, catalog)
    precision, precision_note = _precision(row["precision"], gpu_id, shape, catalog)
    concurrency = concurrency_of(row["silicon_data_source"])
    prefill = _worker(row, "prefill", shape.attention_heads, gpu_id, catalog)
    decode = _worker(row, "decode", shape.attention_heads, gpu_id, catalog)
    measured_ms(row)
    case = DisaggCase(
        model=model_id,
        gpu=gpu_id,
        precision=precision,
        input_tokens=_int(row["isl"], "isl"),
        output_tokens=_int(row["osl"], "osl"),
        prefill=prefill,
        decode=decode,
        concurrency=concurrency,
        kv_link=kv_link_for(catalog, gpu_id, prefill, decode),
    )
    notes = [n for n in (model_note and f"{row['model_path']} -> {model_id}: {model_note}", precision_note) if n]
    return case, notes


def query_for(case: DisaggCase, worker: Worker, catalog: Catalog) -> InferenceQuery:
    gpu = catalog.gpus[case.gpu]
    return InferenceQuery(
        model=shape_of(case.model, catalog),
        gpu=gpu,
        gpus=worker.gpus,
        precision=case.precision,
        input_tokens=case.input_tokens,
        output_tokens=case.output_tokens,
        link=link_for(chassis_for(catalog, gpu, worker.gpus), gpu, worker.gpus),
        attention_dp=worker.attention_dp,
    )


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


# --- rendering -------------------------------------------------------------------------------

FIGURES = ("rows", "TTFT ratio", "TTFT error", "TPOT ratio", "TPOT error")


def _cells(s: DisaggSummary) -> list[str]:
    return [str(s.count), f"{s.ttft_ratio:.2f}", f"{s.ttft_error:.2f}x", f"{s.tpot_ratio:.2f}", f"{s.tpot_error:.2f}x"]


def _lengths(r: DisaggResult) -> str:
    return f"{r.case.input_tokens}/{r.case.output_tokens}"


def tables(report: DisaggReport) -> list[Table]:
    """Overall, per model and GPU, per model and concurrency band, then finer cuts."""
    by_gpu, by_band = report.by_model_and_gpu(), report.by_model_and_band()
    cuts = (
        ("engine", lambda r: r.backend),
        ("KV link", lambda r: r.case.kv_link.kind),
        ("input/output tokens", _lengths),
        ("loop at a phase's ceiling", lambda r: r.bound or "neither"),
    )
    out = [
        Table("All predicted rows", ("group",), [["all", *_cells(s)] for s in report.overall()]),
        Table(
            "Per model and GPU",
            ("model", "GPU"),
            [[s.model, s.gpu, *_cells(s)] for s in by_gpu],
            frozenset(i for i, s in enumerate(by_gpu) if s.gpu == "all"),
        ),
        Table(
            "Per model and concurrency band",
            ("model", "concurrency"),
            [[s.model, s.band, *_cells(s)] for s in by_band],
            frozenset(i for i, s in enumerate(by_band) if s.model == "all"),
        ),
    ]
    for name, key in cuts:
        out.append(Table(f"Per {name}", (name,), [[k, *_cells(s)] for k, s in report.by(name, key)]))
    return out


def _skips(report: DisaggReport) -> list[tuple[str, int]]:
    return sorted(report.skipped.items(), key=lambda kv: (-kv[1], kv[0]))


def counts(report: DisaggReport) -> str:
    return f"{report.rows} disagg rows: {len(report.results)} predicted, {sum(report.skipped.values())} skipped"


def skip_lines(report: DisaggReport) -> list[str]:
    return [f"{n:5d}  {why}" for why, n in _skips(report)]


def text_table(report: DisaggReport) -> str:
    """Every table as aligned plain text (ratio = predicted / measured; error as a factor)."""
    parts = []
    for t in tables(report):
        if t.rows:
            parts += [t.title, _aligned((*t.labels, *FIGURES), t.rows, len(t.labels)), ""]
    return "\n".join(parts).rstrip()


def markdown(report: DisaggReport, command: str, day: datetime.date, findings: str = "") -> str:
    """The report (``docs/aic_disagg_check.md``); ``findings`` goes after the band table."""
    out = [
        "# The disaggregated model against aiconfigurator's silicon measurements",
        "",
        f"Generated by `{command}` on {day.isoformat()}; do not edit by hand.",
        f"Source: `{report.source.name}` ({counts(report)} with a reason). "
        "Catalogs and model: as installed when this was generated.",
        "",
        _INTRO.strip(),
    ]
    for i, t in enumerate(tables(report)):
        out += ["", f"## {t.title}", ""]
        out += [_md_row((*t.labels, *FIGURES)), _md_row(["---"] * len(t.labels) + ["---:"] * len(FIGURES))]
        out += [_md_row([f"**{c}**" for c in row] if j in t.totals else row) for j, row in enumerate(t.rows)]
        if i == 2 and findings:
            out += ["", "## What the errors point at", "", findings.strip()]
    out += [
        "",
        "## Skipped rows, by reason",
        "",
        "Each row counts once, under the first reason that applies (model, GPU, precision, workers, link).",
        "",
        _md_row(("rows", "reason")),
        _md_row(("---:", "---")),
        *(_md_row((str(n), why)) for why, n in _skips(report)),
        "",
        "## How rows become predictions",
        "",
        RULES.strip(),
        "",
        "The closed loop (`closed_loop` in `planner/perf/calibration/aic_disagg.py`):",
        "",
        (__doc__ or "").split("\n\n", 2)[2].split("\n\nNothing")[0].strip(),
    ]
    if report.notes:
        out += ["", "Mappings that are the closest, not the same (applied to rows above):", ""]
        out += [f"- {note}" for note in sorted(report.notes)]
    return "\n".join(out) + "\n"


def report_json(report: DisaggReport) -> dict[str, Any]:
    return {
        "source": str(report.source),
        "rows": report.rows,
        "predicted": len(report.results),
        "overall": [s.to_dict() for s in report.overall()],
        "by_model_gpu": [s.to_dict() for s in report.by_model_and_gpu()],
        "by_model_band": [s.to_dict() for s in report.by_model_and_band()],
        "skipped_by_reason": dict(_skips(report)),
        "notes": sorted(report.notes),
        "results": [r.to_dict() for r in report.results],
    }


_INTRO = """
Ratio = predicted / measured mean, the median over the group's rows (> 1: the model is slower than
the silicon). Error = exp(median |ln(predicted / measured)|), as in `docs/aic_check.md`: 1.10x is a
typical row 10% off. TTFT is the mean time to first token of a closed loop of N clients (so it
includes waiting behind other prompts on the prefill workers and the KV transfer); TPOT the mean
time per output token on the decode workers. Concurrency bands: 1-8, 9-32, 33-128 and 129+ clients.
The aggregated rows are in `docs/aic_check.md`.
"""
