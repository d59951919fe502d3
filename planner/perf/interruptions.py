"""A training job's interruptions: failures, checkpoints, restarts and repairs, the hot-spare
servers that hide the repairs, and the goodput they leave (useful steps / wall time).

A job of ``N`` GPUs on ``S`` servers (compute trays on rack-scale systems), with the catalog's
``training.interruptions`` (λ per GPU-hour, hardware share η, restart R, checkpoint write rate,
repair time T):

- Interruptions while it runs: ``Λ = N λ`` per hour. A synchronous job stops at any of them.
- Checkpoints: a pause of ``δ = checkpoint bytes / (N x write rate per GPU)`` every
  ``τ = sqrt(2 δ / Λ)`` hours of work (Young 1974, the first-order optimum; Daly 2006 adds
  terms of order δ). Each interruption costs the restart R and, on average, the half interval
  of steps since the last checkpoint. Running time lost: ``δ/τ + Λ (τ/2 + R) = sqrt(2 δ Λ) + Λ R``.
- Repairs: a hardware interruption (share η) takes its server away for T hours. The job's
  servers in repair are Poisson with mean ``m = N λ η T`` (an M/G/inf queue: Palm's theorem, for
  any repair-time distribution). With ``h`` hot spares on hand the job runs while at most ``h``
  servers are in repair, and waits otherwise: it runs a share ``P(K <= h)`` of its wall time.
- ``goodput(h) = (1 - sqrt(2 δ Λ) - Λ R) x P(K <= h)``.
- The job holds the ``h`` that minimises its GPU-time per useful step, ``(S + h) / goodput(h)``:
  none for small jobs (a spare costs more than the waits it saves), a few for large ones.

A job inside one server, or without a scale-out fabric to bring a spare in, holds no spares.
A rented job holds none either: the cloud swaps a failed server in from its own fleet within
the restart, so it never waits for a repair.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner.schema.efficiency import InterruptionAssumptions


@dataclass(frozen=True)
class Interruptions:
    per_hour: float  # the job's interruptions per running hour (Λ)
    checkpoint_s: float  # the pause to write one checkpoint (δ)
    checkpoint_interval_hours: float  # work between checkpoints (τ); inf when nothing interrupts
    restart_loss: float  # share of running time lost to checkpoints, lost steps and restarts
    in_repair_mean: float  # the job's servers in repair on average, without spares (m)
    hot_spares: int  # h, in servers (compute trays on rack-scale systems)
    repair_wait: float  # share of wall time waiting for a server back from repair: P(K > h)

    @property
    def goodput(self) -> float:
        return (1.0 - self.restart_loss) * (1.0 - self.repair_wait)


def poisson_cdf(h: int, mean: float) -> float:
    """P(K <= h) for K ~ Poisson(mean)."""
    term = total = math.exp(-mean)
    for k in range(1, h + 1):
        term *= mean / k
        total += term
    return min(1.0, total)


def restart_loss(per_hour: float, checkpoint_s: float, restart_minutes: float) -> tuple[float, float]:
    """The Young interval (hours) and the share of running time lost: ``sqrt(2 δ Λ) + Λ R``."""
    if per_hour <= 0:
        return math.inf, 0.0
    delta_h = checkpoint_s / 3600.0
    tau = math.sqrt(2.0 * delta_h / per_hour)
    lost = (delta_h / tau if tau > 0 else 0.0) + per_hour * (tau / 2.0 + restart_minutes / 60.0)
    return tau, lost


def goodput_with_spares(running: float, in_repair_mean: float, spares: int) -> float:
    """Goodput with ``spares`` hot spares: ``running x P(K <= spares)``."""
    return running * poisson_cdf(spares, in_repair_mean)


def best_spares(servers: float, running: float, in_repair_mean: float) -> int:
    """The spares minimising ``(servers + h) / goodput(h)`` (the first, on a tie).

    Goodput never exceeds ``running``, so once ``(servers + h) / running`` reaches the best
    ratio found, no larger ``h`` can do better: the scan is exact.
    """
    best_h, best = 0, servers / goodput_with_spares(running, in_repair_mean, 0)
    h = 1
    while (servers + h) / running < best:
        ratio = (servers + h) / goodput_with_spares(running, in_repair_mean, h)
        if ratio < best:
            best_h, best = h, ratio
        h += 1
    return best_h


def interruptions(
    gpus: int,
    gpus_per_unit: int,
    checkpoint_bytes: float,
    a: InterruptionAssumptions,
    spares_allowed: bool,
    repairs: bool = True,
) -> Interruptions:
    """The interruption model for one job (module docstring). ``gpus_per_unit``: GPUs per
    server (per compute tray on rack-scale systems), the unit a failure takes away and a spare
    replaces. ``repairs`` False: a cloud's job, whose failed servers are swapped in at once."""
    per_hour = gpus * a.per_gpu_hour
    checkpoint_s = checkpoint_bytes / (gpus * a.checkpoint_write_gb_per_s_per_gpu * 1e9)
    tau, lost = restart_loss(per_hour, checkpoint_s, a.restart_minutes)
    mean = per_hour * a.hardware_share * a.repair_hours if repairs else 0.0
    running = 1.0 - lost
    spares = 0
    if spares_allowed and repairs and running > 0 and mean > 0:
        spares = best_spares(gpus / gpus_per_unit, running, mean)
    return Interruptions(
        per_hour=per_hour,
        checkpoint_s=checkpoint_s,
        checkpoint_interval_hours=tau,
        restart_loss=lost,
        in_repair_mean=mean,
        hot_spares=spares,
        repair_wait=1.0 - poisson_cdf(spares, mean),
    )
