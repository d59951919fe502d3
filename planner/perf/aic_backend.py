"""aiconfigurator as an optional source of inference latency, beside the analytic model.

NVIDIA's aiconfigurator (Apache-2.0; ``pip install 'planner[aiconfigurator]'``) predicts a
serving engine's step times from measured kernel tables (GEMM, attention, MoE, NCCL) per
GPU and engine. Where those tables exist and the measurements say it is closer than the
analytic model (``PREFERRED`` below, from ``benchmarks/aic_backend_check.py``; numbers in
``docs/aiconfigurator.md``), the planner may take its TTFT and TPOT instead; everywhere else
the analytic model (``planner.perf.inference``) answers.

The base install never needs it: ``available()`` is False without it, and every entry
point then answers with the analytic model. Rules kept here:

- no network: a model is given to aiconfigurator as one of the configs it bundles (by its
  Hugging Face id, ``aic_models.BUNDLED``) or as a local folder holding a ``config.json`` (``COPIED``:
  a config file aiconfigurator ships but does not list; ``GENERATED``: written from the
  planner's catalog entry). Any other model gets no answer, never a download;
- one memory model: whether a replica fits, its weights and KV cache are the planner's own
  (so sources stay comparable); aiconfigurator gives the latencies, throughput and p99s;
- a fixed engine (``ENGINE``) and the database version aiconfigurator 0.12.0 calls
  ``current`` (pinned: resolving the newest version on every call costs a second);
- any failure inside aiconfigurator (a shape its tables lack, an OOM it predicts) is
  "no answer" (None), and the analytic model answers instead.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import json
import logging
import math
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from planner.perf.aic_models import BUNDLED, COPIED, GENERATED, dense_config, quant_modes
from planner.perf.inference import estimate_inference
from planner.perf.inference_types import InferenceEstimate, InferenceQuery
from planner.schema.efficiency import GenerationEfficiency, ServingAssumptions

AIC_VERSION = "0.12.0"  # the version these tables and the preference were measured with
ENGINE = "trtllm"  # aiconfigurator's engine tables the planner asks (trtllm | vllm | sglang)
DATABASE_VERSION = "current"  # aiconfigurator's pinned slot per (system, engine)


# Catalog GPU id -> aiconfigurator system with measured kernel tables. Its other systems
# (h100_pcie, a100_pcie, a30, l4) have no tables and fall back to theoretical peaks.
SYSTEMS: dict[str, str] = {
    "H100-SXM": "h100_sxm",
    "H200-SXM": "h200_sxm",
    "B200": "b200_sxm",
    "B300": "b300_sxm",
    "GB200": "gb200",
    "GB300": "gb300",
    "L40S": "l40s",
    "RTX-PRO-6000": "rtx_pro_6000_server",
    "A100-SXM-80GB": "a100_sxm",
}

# aiconfigurator (ENGINE's tables) against the analytic model on the aggregated rows of
# aic_silicon.csv (benchmarks/aic_backend_check.py, docs/aiconfigurator.md, 2026-12-01):
# (catalog model id, catalog GPU id) -> TTFT error of the model, of aiconfigurator, TPOT error
# of the model, of aiconfigurator (each exp median |ln(predicted / measured)|), rows.
MEASURED: dict[tuple[str, str], tuple[float, float, float, float, int]] = {
    ("deepseek-r1", "H200-SXM"): (1.40, 1.69, 1.13, 1.13, 67),
    ("deepseek-r1", "B200"): (1.77, 2.78, 1.27, 1.21, 240),
    ("deepseek-v3", "H200-SXM"): (1.39, 1.68, 1.14, 1.10, 30),
    ("deepseek-v3", "B200"): (2.14, 3.66, 1.28, 1.14, 97),
    ("deepseek-v3", "B300"): (7.38, 8.53, 1.57, 1.40, 10),
    ("gpt-oss-120b", "H100-SXM"): (1.44, 1.32, 1.19, 1.29, 67),
    ("gpt-oss-120b", "H200-SXM"): (1.17, 1.23, 1.13, 1.12, 152),
    ("gpt-oss-120b", "B200"): (1.66, 1.40, 1.30, 1.08, 188),
    ("kimi-k2", "B200"): (1.12, 1.36, 1.12, 1.15, 45),
    ("kimi-k2", "B300"): (1.26, 1.12, 1.17, 1.15, 22),
    ("llama-3.1-70b", "H100-SXM"): (1.24, 1.41, 1.06, 1.05, 43),
    ("llama-3.1-70b", "H200-SXM"): (1.17, 1.22, 1.07, 1.09, 58),
    ("llama-3.1-70b", "B200"): (1.28, 1.23, 1.12, 1.16, 120),
    ("llama-3.1-8b", "H200-SXM"): (1.68, 1.22, 1.20, 1.83, 21),
}
# Preferred where aiconfigurator's TTFT and TPOT errors are both the lower: gpt-oss-120b on
# B200 (clearly) and kimi-k2 on B300 (22 rows, TPOT only just).
PREFERRED: frozenset[tuple[str, str]] = frozenset(
    pair
    for pair, (ttft_model, ttft_aic, tpot_model, tpot_aic, _) in MEASURED.items()
    if ttft_aic < ttft_model and tpot_aic < tpot_model
)


def offline_environment() -> None:
    """Tell Hugging Face libraries (if aiconfigurator loads any) to stay offline."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@functools.cache
def _modules() -> dict[str, Any] | None:
    """aiconfigurator's modules, or None when it is not installed (or not the version measured)."""
    offline_environment()
    try:
        from importlib import metadata

        if metadata.version("aiconfigurator") != AIC_VERSION:
            return None
        names = {
            "api": "aiconfigurator.cli.api",
            "config": "aiconfigurator.sdk.config",
            "session": "aiconfigurator.sdk.inference_session",
            "backends": "aiconfigurator.sdk.backends.factory",
            "models": "aiconfigurator.sdk.models",
            "database": "aiconfigurator.sdk.perf_database",
            "common": "aiconfigurator_core.sdk.common",
        }
        mods = {key: importlib.import_module(name) for key, name in names.items()}
    except Exception:  # not installed, or broken: the analytic model answers
        return None
    for name in ("aiconfigurator", "aiconfigurator_core"):  # its table-loading notices are not ours
        logging.getLogger(name).setLevel(logging.ERROR)
    return mods


def available() -> bool:
    """True when aiconfigurator (the measured version) imports."""
    return _modules() is not None


def preferred_for(query: InferenceQuery) -> bool:
    """True where the measurements say aiconfigurator is closer than the analytic model (never
    with a prefix cache or speculation: those are the analytic model's alone)."""
    plain = query.prefix is None and query.speculation is None
    return plain and (query.model.name, query.gpu.id) in PREFERRED


# --- models: bundled ids or local folders, never a download ---------------------------


@functools.cache
def _local_folder(model_id: str) -> str | None:
    """A folder with the model's config.json (copied or generated), made once per process."""
    if model_id in COPIED:
        mods = _modules()
        if mods is None:
            return None
        source = Path(mods["common"].__file__).parents[1] / "model_configs" / COPIED[model_id]
        config = json.loads(source.read_text(encoding="utf-8"))
    elif model_id in GENERATED:
        from planner.catalog import load_catalog

        config = dense_config(load_catalog().model(model_id), GENERATED[model_id])
    else:
        return None
    folder = Path(tempfile.mkdtemp(prefix=f"planner-aic-{model_id}-"))
    (folder / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    return str(folder)


def model_path(model_id: str) -> str | None:
    """What aiconfigurator is given for a catalog model: a bundled id or a local folder; else None."""
    mods = _modules()
    if mods is None:
        return None
    if model_id in BUNDLED:
        hf_id = BUNDLED[model_id]
        return hf_id if hf_id in mods["common"].DefaultHFModels else None  # never a download
    return _local_folder(model_id)


# --- the estimate -----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Key:
    model_path: str
    system: str
    engine: str
    tp: int
    dp: int
    moe_ep: int
    modes: tuple[tuple[str, str], ...]


@functools.cache
def _session(key: _Key) -> tuple[Any, str]:
    """aiconfigurator's session for one replica kind (tables loaded once) and its database version.

    Mirrors ``aiconfigurator.cli.api._run_agg_estimate`` up to the session; the estimate
    itself is then a call to ``run_agg`` (a quarter of a millisecond, against 13 ms for
    ``cli_estimate`` with the version pinned).
    """
    mods = _modules()
    assert mods is not None
    api, modes = mods["api"], dict(key.modes)
    moe_tp, moe_ep = api._resolve_moe_parallelism(key.tp, key.dp, None, key.moe_ep, model_path=key.model_path)
    config = api._build_model_config(
        key.tp,
        1,
        key.dp,
        moe_tp,
        moe_ep,
        modes["gemm_quant_mode"],
        modes["kvcache_quant_mode"],
        None,
        modes["moe_quant_mode"],
        None,
        forward_model=None,
        enable_encoder_dp=True,
        attention_backend=None,
    )
    api._apply_nextn(config, 0)
    database = mods["database"].get_database_view(
        key.system, key.engine, DATABASE_VERSION, allow_missing_data=False, database_mode="SILICON"
    )
    if database is None:
        raise RuntimeError(f"no {key.engine} tables for {key.system}")
    api.resolve_context_fmha_by_data(config, key.model_path, database, key.engine, is_context_role=True)
    api.resolve_dsv4_moe_arch(config, key.model_path, system_name=key.system, backend_name=key.engine)
    api.resolve_nvfp4_for_system(config, key.system, key.model_path, backend_name=key.engine)
    model = mods["models"].get_model(key.model_path, config, key.engine)
    session = mods["session"].InferenceSession(model, database, mods["backends"].get_backend(key.engine))
    return session, str(getattr(database, "version", DATABASE_VERSION))


@dataclasses.dataclass(frozen=True)
class _Point:
    ttft_ms: float
    tpot_ms: float
    requests_per_s: float
    output_tokens_per_s: float


def _run(key: _Key, input_tokens: int, output_tokens: int, batch_per_group: int, ctx_tokens: int) -> _Point | None:
    mods = _modules()
    assert mods is not None
    session, _ = _session(key)
    runtime = mods["config"].RuntimeConfig(
        isl=input_tokens, osl=output_tokens, batch_size=batch_per_group, engine_step_backend="rust"
    )
    summary = session.run_agg(
        runtime,
        ctx_tokens=ctx_tokens,
        max_seq_len=None,
        free_gpu_memory_fraction=None,
        decode_tokens_per_iteration=None,
    )
    if summary.check_oom():
        return None
    row = summary.get_result_dict()
    if not row:
        return None
    point = _Point(float(row["ttft"]), float(row["tpot"]), float(row["seq/s"]), float(row["tokens/s"]))
    finite = all(math.isfinite(v) and v > 0 for v in dataclasses.astuple(point))
    return point if finite else None


def _key(query: InferenceQuery, engine: str) -> _Key | None:
    system = SYSTEMS.get(query.gpu.id)
    path = model_path(query.model.name)
    modes = quant_modes(query)
    if system is None or path is None or modes is None:
        return None
    dp = query.attention_dp
    if dp < 1 or query.gpus % dp:
        return None
    moe_ep = query.gpus if query.model.experts > 1 else 1  # the planner spreads experts over all GPUs
    return _Key(path, system, engine, query.gpus // dp, dp, moe_ep, tuple(sorted(modes.items())))


def aic_estimate(
    query: InferenceQuery,
    gen: GenerationEfficiency,
    serving: ServingAssumptions,
    *,
    engine: str = ENGINE,
) -> InferenceEstimate | None:
    """aiconfigurator's answer to the planner's query, or None where it has none.

    It answers a given load, a closed loop of ``clients`` or a steady batch (``concurrency``),
    and the largest steady batch meeting the targets (``steady_batch``); Poisson arrivals
    (``rate``, or sizing a rate for the targets, the optimiser's question) are the analytic
    model's alone: aiconfigurator has no arrival-process model.

    The footprint (fit, weights, KV cache, largest batch) is the analytic model's. The p99s
    apply the analytic model's p99 factors to aiconfigurator's means (TTFT: to its queueing
    part, its TTFT at N less its TTFT alone). TTFT at N clients is aiconfigurator's, with its
    engine's queueing factor for N requests in flight.
    """
    mods = _modules()
    poisson = query.rate is not None or (query.clients is None and query.concurrency is None and not query.steady_batch)
    if mods is None or poisson:
        return None  # Poisson arrivals (a rate, or sizing one for the targets): the analytic queue answers
    key = _key(query, engine)
    if key is None:
        return None
    analytic = estimate_inference(query, gen, serving)
    if not analytic.fits:
        return None  # one memory model: what does not fit in the planner's does not fit here
    dp = query.attention_dp
    # aiconfigurator's own default: one prompt's tokens per mixed iteration. The benchmark's
    # 8192-token budget (serving.token_budget) measured worse here: TTFT 1.72x off against 1.45x.
    ctx_tokens = query.input_tokens

    @functools.cache
    def point(batch: int) -> _Point | None:
        try:
            return _run(key, query.input_tokens, query.output_tokens, max(1, batch // dp), ctx_tokens)
        except Exception:  # a shape its tables or models do not cover
            return None

    alone = point(dp)  # one sequence per attention group: no queueing
    if alone is None:
        return None

    def p99(batch: int, p: _Point) -> tuple[float, float]:
        spread = (serving.tpot_p99_factor - 1) * (batch - 1) / batch
        queue = max(0.0, p.ttft_ms - alone.ttft_ms)
        return alone.ttft_ms + serving.ttft_p99_factor * queue, p.tpot_ms * (1 + spread)

    batch = _batch(query, analytic.max_batch_by_memory, point, p99, dp)
    if batch is None:
        return None
    found = point(batch)
    if found is None:
        return None
    ttft_p99, tpot_p99 = p99(batch, found)
    _, version = _session(key)
    factors: dict[str, float | str] = {
        **analytic.factors,
        "source": "aiconfigurator",
        "aiconfigurator_version": AIC_VERSION,
        "aiconfigurator_engine": f"{engine} {version}",
        "aiconfigurator_system": key.system,
        "aiconfigurator_model": key.model_path if key.model_path in BUNDLED.values() else query.model.name,
        "aiconfigurator_ctx_tokens": ctx_tokens,
    }
    rps = found.requests_per_s
    # a closed loop's rate is what it serves (as the analytic model); a steady batch keeps headroom
    planned = rps if query.clients is not None else rps * serving.headroom
    return dataclasses.replace(
        analytic,
        batch=batch,
        output_tokens_per_s=found.output_tokens_per_s,
        output_tokens_per_s_per_gpu=found.output_tokens_per_s / query.gpus,
        ttft_ms=found.ttft_ms,
        tpot_ms=found.tpot_ms,
        ttft_p99_ms=ttft_p99,
        tpot_p99_ms=tpot_p99,
        requests_per_s=rps,
        planning_requests_per_s=planned,
        factors=factors,
    )


def _batch(
    query: InferenceQuery,
    by_memory: int,
    point: Callable[[int], _Point | None],
    p99: Callable[[int, _Point], tuple[float, float]],
    dp: int,
) -> int | None:
    """The concurrency asked for, else the largest multiple of ``dp`` meeting the p99 targets."""
    if query.clients is not None:
        return query.clients
    if query.concurrency is not None:
        return query.concurrency

    def ok(batch: int) -> bool:
        p = point(batch)
        if p is None:
            return False
        ttft, tpot = p99(batch, p)
        if query.tpot_ms is not None and tpot > query.tpot_ms:
            return False
        return not (query.ttft_ms is not None and ttft > query.ttft_ms)

    lo, hi = 1, max(1, by_memory // dp)  # in sequences per attention group
    if not ok(lo * dp):
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ok(mid * dp):
            lo = mid
        else:
            hi = mid - 1
    return lo * dp


def estimate(query: InferenceQuery, gen: GenerationEfficiency, serving: ServingAssumptions) -> InferenceEstimate:
    """The preferred source's estimate: aiconfigurator where it is installed and measured closer
    (``preferred_for``) and has an answer, else the analytic model; ``factors["source"]`` says which."""
    if available() and preferred_for(query):
        found = aic_estimate(query, gen, serving)
        if found is not None:
            return found
    analytic = estimate_inference(query, gen, serving)
    return dataclasses.replace(analytic, factors={**analytic.factors, "source": "model"})
