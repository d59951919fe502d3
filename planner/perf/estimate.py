"""`planner estimate`: the performance model called directly, from names on the command line."""

from __future__ import annotations

import math
from typing import Any

from planner.catalog import Catalog, load_catalog, suggest
from planner.errors import InputError
from planner.perf.inference import estimate_inference
from planner.perf.inference_types import InferenceQuery
from planner.perf.links import link_for
from planner.perf.precision import BYTES
from planner.perf.shapes import ModelShape, shape_of
from planner.perf.speculation import PrefixCache, Speculation, mtp_params_b, speculation_of
from planner.perf.training import TrainingQuery, estimate_training
from planner.schema.catalog import Gpu, ServerChassis
from planner.schema.model_ref import InlineModel
from planner.schema.serving import SpeculativeSpec


def _shape(catalog: Catalog, model: str | None, params_b: float | None) -> ModelShape:
    if (model is None) == (params_b is None):
        raise InputError("give exactly one of --model NAME or --params-b SIZE", key="--model")
    if model is not None:
        if catalog.find_model_id(model) is None:
            raise InputError(f"unknown model {model!r}", key="--model", hint=suggest(model, list(catalog.models)))
        return shape_of(model, catalog)
    assert params_b is not None  # exactly one of the two, checked above
    return shape_of(InlineModel(params_b=params_b), catalog)


def _gpu(catalog: Catalog, name: str) -> Gpu:
    found = catalog.find_gpu_id(name)
    if found is None:
        raise InputError(f"unknown GPU {name!r}", key="--gpu", hint=suggest(name, list(catalog.gpus)))
    return catalog.gpus[found]


def _server(catalog: Catalog, gpu: Gpu, gpus: int, name: str | None) -> ServerChassis:
    """The named chassis, else the one with the fastest GPU link that holds the GPUs."""
    if name is not None:
        chassis = catalog.servers.get(name)
        if chassis is None:
            raise InputError(f"unknown server {name!r}", key="--server", hint=suggest(name, list(catalog.servers)))
        if gpu.id not in chassis.gpus:
            raise InputError(f"server {name} does not take {gpu.id}", key="--server")
        return chassis
    fits = [s for s in catalog.servers.values() if gpu.id in s.gpus]
    return max(
        fits, key=lambda s: (link_for(s, gpu, min(gpus, s.gpus_per_server)).gb_per_s_one_way, s.gpus_per_server, s.id)
    )


def _serving_options(
    catalog: Catalog,
    model: str | None,
    shape: ModelShape,
    input_tokens: int,
    shared: int | None,
    hit_rate: float | None,
    draft: str | None,
    mtp: bool,
    acceptance: float | None,
    tokens: int | None,
) -> tuple[PrefixCache | None, Speculation | None]:
    """The command line's prefix cache and speculation, checked as the problem file's keys are."""
    prefix = None
    if (shared is None) != (hit_rate is None):
        raise InputError("give --prefix-shared-tokens and --prefix-hit-rate together", key="--prefix-hit-rate")
    if shared is not None and hit_rate is not None:
        if shared >= input_tokens:
            raise InputError(
                f"--prefix-shared-tokens {shared} must be less than --input-tokens {input_tokens}",
                key="--prefix-shared-tokens",
            )
        prefix = PrefixCache(shared, hit_rate)
    if draft is None and not mtp:
        if acceptance is not None or tokens is not None:
            raise InputError("--acceptance-rate needs --draft-model or --mtp", key="--acceptance-rate")
        return prefix, None
    if acceptance is None or not 0 < acceptance < 1:
        raise InputError("speculation needs --acceptance-rate in (0, 1)", key="--acceptance-rate")
    if draft is not None and mtp:
        raise InputError("give one of --draft-model and --mtp", key="--draft-model")
    if draft is not None and catalog.find_model_id(draft) is None:
        hint = suggest(draft, list(catalog.models))
        raise InputError(f"unknown draft model {draft!r}", key="--draft-model", hint=hint)
    if mtp and (model is None or mtp_params_b(model, catalog) is None):
        raise InputError(f"{shape.name} has no multi-token-prediction heads (no mtp_params_b)", key="--mtp")
    spec = SpeculativeSpec(draft_model=draft, mtp=mtp, acceptance_rate=acceptance, tokens=tokens)
    return prefix, speculation_of(spec, model or InlineModel(params_b=shape.params_b), shape, catalog)


def _precision(value: str, allowed: tuple[str, ...]) -> str:
    p = value.lower()
    if p not in allowed:
        raise InputError(f"unknown precision {value!r}", key="--precision", hint=f"one of {', '.join(allowed)}")
    return p


def run_inference_estimate(
    *,
    gpu: str,
    model: str | None,
    params_b: float | None,
    gpus: int,
    precision: str,
    input_tokens: int,
    output_tokens: int,
    concurrency: int | None,
    tpot_ms: float | None,
    ttft_ms: float | None,
    server: str | None,
    attention_dp: int = 1,
    clients: int | None = None,
    rate: float | None = None,
    prefix_shared_tokens: int | None = None,
    prefix_hit_rate: float | None = None,
    draft_model: str | None = None,
    mtp: bool = False,
    acceptance_rate: float | None = None,
    speculated_tokens: int | None = None,
) -> dict[str, Any]:
    """One replica of ``gpus`` GPUs; ``attention_dp`` > 1 splits them into that many attention
    groups (tensor-parallel inside each) with the routed experts spread over all of them.
    A prefix cache and speculative decoding as the service keys ``prefix_cache`` and
    ``speculative`` give them."""
    if sum(x is not None for x in (concurrency, clients, rate)) > 1:
        raise InputError("give at most one of --concurrency, --rate and --batch", key="--concurrency")
    catalog = load_catalog()
    shape = _shape(catalog, model, params_b)
    g = _gpu(catalog, gpu)
    chassis = _server(catalog, g, gpus, server)
    if gpus > chassis.gpus_per_server:
        raise InputError(
            f"a replica is at most one server: {chassis.id} holds {chassis.gpus_per_server} x {g.id}", key="--gpus"
        )
    if attention_dp < 1 or gpus % attention_dp:
        raise InputError(
            f"--attention-dp {attention_dp} must divide the replica's {gpus} GPUs into equal attention groups",
            key="--attention-dp",
        )
    prefix, speculation = _serving_options(
        catalog,
        model,
        shape,
        input_tokens,
        prefix_shared_tokens,
        prefix_hit_rate,
        draft_model,
        mtp,
        acceptance_rate,
        speculated_tokens,
    )
    q = InferenceQuery(
        model=shape,
        gpu=g,
        gpus=gpus,
        precision=_precision(precision, tuple(BYTES)),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        link=link_for(chassis, g, gpus),
        concurrency=concurrency,
        clients=clients,
        rate=rate,
        tpot_ms=tpot_ms,
        ttft_ms=ttft_ms,
        attention_dp=attention_dp,
        prefix=prefix,
        speculation=speculation,
    )
    eff = catalog.efficiency
    est = estimate_inference(q, eff.generations[g.generation], eff.serving)
    return {
        "model": shape.name,
        "gpu": g.id,
        "gpus": gpus,
        "attention_dp": attention_dp,
        "server": chassis.id,
        "precision": q.precision,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        **est.to_dict(),
    }


def run_training_estimate(
    *,
    gpu: str,
    tokens: float,
    model: str | None,
    params_b: float | None,
    gpus: int,
    precision: str,
    method: str,
    fabric: str | None,
    seq_len: int,
    server: str | None,
) -> dict[str, Any]:
    catalog = load_catalog()
    shape = _shape(catalog, model, params_b)
    g = _gpu(catalog, gpu)
    chassis = _server(catalog, g, gpus, server)
    per = chassis.gpus_per_server
    _check_job_size(chassis, gpus)
    if method not in ("full", "lora", "qlora"):
        raise InputError(f"unknown method {method!r}", key="--method", hint="one of full, lora, qlora")
    fab = catalog.fabric(fabric) if fabric else catalog.fabrics["ib-ndr" if gpus > per else "none"]
    q = TrainingQuery(
        model=shape,
        gpu=g,
        gpus=gpus,
        tokens=tokens,
        precision=_precision(precision, ("bf16", "fp8")),
        method=method,
        fabric=fab,
        gpus_per_server=per,
        gpus_per_tray=chassis.gpus_per_tray,
        nics_per_server=chassis.scaleout_nics,
        gpu_link=link_for(chassis, g, min(gpus, per)).kind,
        seq_len=seq_len,
    )
    eff = catalog.efficiency
    est = estimate_training(q, eff.generations[g.generation], eff.training, eff.serving.memory_reserve_fraction)
    return {
        "model": shape.name,
        "gpu": g.id,
        "gpus": gpus,
        **_placement(chassis, gpus),
        "server": chassis.id,
        "fabric": fab.id,
        "precision": q.precision,
        "method": method,
        "tokens": tokens,
        **est.to_dict(),
    }


def _check_job_size(chassis: ServerChassis, gpus: int) -> None:
    """Beyond one server a job takes whole servers; on rack-scale systems whole compute trays
    (or a part of one tray that divides it), inside one rack and across racks."""
    per, tray = chassis.gpus_per_server, chassis.gpus_per_tray
    if tray is None:
        if gpus > per and gpus % per:
            raise InputError(f"a job beyond one server uses whole servers: a multiple of {per}", key="--gpus")
    elif gpus % tray and tray % gpus:
        raise InputError(
            f"{chassis.id} places jobs on {tray}-GPU compute trays: a multiple of {tray}, or a part of one tray "
            f"that divides it",
            key="--gpus",
        )


def _placement(chassis: ServerChassis, gpus: int) -> dict[str, int]:
    """Servers (racks, on rack-scale systems) a job occupies; on rack-scale systems also its
    compute trays and the trays of those racks it leaves free for other work (the plan
    counts GPUs per pool, so other jobs and replicas may use them; a job on its own still
    buys every rack it touches)."""
    servers = math.ceil(gpus / chassis.gpus_per_server)
    tray = chassis.gpus_per_tray
    if tray is None:
        return {"servers": servers}
    trays = math.ceil(gpus / tray)
    return {"servers": servers, "trays": trays, "free_trays": servers * chassis.trays - trays}
