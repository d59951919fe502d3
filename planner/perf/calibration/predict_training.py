"""Predicting a training row: the job ``planner estimate training`` would model, and its figures."""

from __future__ import annotations

import re
from collections.abc import Callable

from planner.catalog import Catalog
from planner.perf.calibration.assumptions import ASSUMED_TRAINING_GPUS, DEFAULT_SEQ_LEN, GPUS_PER_SERVER
from planner.perf.calibration.mapping import (
    Skip,
    chassis_for,
    first_int,
    int_or_none,
    model_shape,
    training_precision,
)
from planner.perf.calibration.measurements import Measurement
from planner.perf.links import link_for
from planner.perf.training import TrainingQuery, estimate_training
from planner.schema.catalog import Gpu

_THROUGHPUT_TOKENS = 1e12  # any token count: per-second figures do not depend on it


def _training_gpus(m: Measurement) -> tuple[int, str]:
    n = int_or_none(m.n_gpus) or first_int(r"(\d+)", m.n_gpus)
    if n is not None:
        return n, "" if int_or_none(m.n_gpus) else f"{n} GPUs (from {m.n_gpus!r})"
    return ASSUMED_TRAINING_GPUS, f"{ASSUMED_TRAINING_GPUS} GPUs assumed (not stated)"


def _training_tokens(m: Measurement) -> float:
    """Tokens trained on, from the notes ("2.0T tokens", "15T+ pretraining tokens", "366B training tokens")."""
    found = re.search(r"(\d+(?:\.\d+)?)\s*([TB])\+?\s+(?:pretraining\s+|training\s+)?tokens", f"{m.notes} {m.model}")
    if not found:
        raise Skip("tokens not stated: GPU-hours cannot be predicted")
    return float(found.group(1)) * (1e12 if found.group(2) == "T" else 1e9)


def predict_training(catalog: Catalog, m: Measurement, gpu: Gpu) -> tuple[float, str]:
    totals = m.metric in ("gpu_hours", "wall_clock_hours")
    tokens = _training_tokens(m) if totals else _THROUGHPUT_TOKENS
    shape = model_shape(catalog, m)
    gpus, gpus_note = _training_gpus(m)
    precision, precision_note = training_precision(m)
    seq = first_int(r"seq\s+(\d+)", m.input_tokens)
    seq_note = "" if seq else f"seq {DEFAULT_SEQ_LEN} assumed"
    method = "lora" if "lora" in m.model.lower() else "full"
    chassis = chassis_for(catalog, gpu, min(gpus, GPUS_PER_SERVER))
    per = chassis.gpus_per_server
    fabric = catalog.fabrics["ib-ndr" if gpus > per else "none"]  # as `planner estimate training`
    q = TrainingQuery(
        model=shape,
        gpu=gpu,
        gpus=gpus,
        tokens=tokens,
        precision=precision,
        method=method,
        fabric=fabric,
        gpus_per_server=per,
        nics_per_server=chassis.scaleout_nics,
        gpu_link=link_for(chassis, gpu, min(gpus, per)).kind,
        seq_len=seq or DEFAULT_SEQ_LEN,
    )
    eff = catalog.efficiency
    est = estimate_training(q, eff.generations[gpu.generation], eff.training, eff.serving.memory_reserve_fraction)
    if not est.fits:
        raise Skip(f"model infeasible: {est.reason}")
    # wall time, the interruption model's goodput included (what GPU-hours rows count, on the
    # job's own GPUs: a published total does not count hot spares)
    seconds = est.days * 86_400
    steady = seconds * est.goodput  # what throughput rows measure
    values: dict[str, Callable[[], float]] = {
        "tokens_per_s_per_gpu": lambda: tokens / steady / gpus,
        "tflops_per_gpu": lambda: est.tflops_per_gpu,
        "aggregate_pflops": lambda: est.tflops_per_gpu * gpus / 1e3,
        "mfu_pct": lambda: est.mfu * 100,
        "hfu_pct": lambda: est.mfu * 100,
        "pct_of_peak_per_gpu": lambda: est.mfu * 100,
        "gpu_hours": lambda: seconds / 3600 * gpus,
        "wall_clock_hours": lambda: seconds / 3600,
    }
    if m.metric not in values:
        raise Skip(f"metric {m.metric!r} not modelled")
    notes = [f"{shape.name} {method} {est.factors.get('compute_precision')} on {gpus} x {gpu.id}"]
    notes += [n for n in (gpus_note, precision_note, seq_note) if n]
    notes.append(f"MFU {est.mfu:.3f} (incl. scaling {est.scaling:.3f})")
    if m.metric in ("hfu_pct", "pct_of_peak_per_gpu"):
        notes.append("model MFU against a hardware-FLOP figure (counts recomputation)")
    if totals:
        notes.append(f"{tokens:.3g} tokens; goodput {est.goodput:.3f}")
    return values[m.metric](), "; ".join(notes)
