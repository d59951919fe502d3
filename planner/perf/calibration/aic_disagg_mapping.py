"""From an aiconfigurator disagg row to the planner's terms: the prefill and decode workers,
the link the KV cache crosses, and the query each worker makes (``planner.perf.calibration.aic_disagg``)."""

from __future__ import annotations

from dataclasses import dataclass

from planner.catalog import Catalog
from planner.perf.calibration.aic_mapping import (
    _int,
    band_of,
    measured_ms,
    row_terms,
)
from planner.perf.calibration.mapping import Skip, chassis_for
from planner.perf.disagg import KvLink
from planner.perf.inference_types import InferenceQuery
from planner.perf.links import link_for, nvlink_domain
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
    t = row_terms(row, catalog)
    prefill = _worker(row, "prefill", t.shape.attention_heads, t.gpu, catalog)
    decode = _worker(row, "decode", t.shape.attention_heads, t.gpu, catalog)
    measured_ms(row)
    case = DisaggCase(
        model=t.model,
        gpu=t.gpu,
        precision=t.precision,
        input_tokens=_int(row["isl"], "isl"),
        output_tokens=_int(row["osl"], "osl"),
        prefill=prefill,
        decode=decode,
        concurrency=t.concurrency,
        kv_link=kv_link_for(catalog, t.gpu, prefill, decode),
    )
    return case, t.notes


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
