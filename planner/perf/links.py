"""The link a group of GPUs in one server talks over, and the group sizes that pack into servers."""

from __future__ import annotations

from planner.perf.inference_types import Link
from planner.schema.catalog import Gpu, ServerChassis


def link_for(chassis: ServerChassis, gpu: Gpu, gpus: int) -> Link:
    """The link a group of ``gpus`` in one server talk over: NVLink-class inside its domain."""
    fast = gpu.nvlink_gb_per_s > 0 and gpus <= nvlink_domain(chassis, gpu)
    if not fast:
        return Link("pcie", gpu.host_link_gb_per_s)
    kind = chassis.gpu_link if chassis.gpu_link != "pcie" else "nvlink"
    return Link(kind, (chassis.gpu_link_gb_per_s or gpu.nvlink_gb_per_s) / 2)


def nvlink_domain(chassis: ServerChassis, gpu: Gpu) -> int:
    """GPUs that reach each other over the GPU link without the host, in this chassis."""
    return min(gpu.nvlink_domain, chassis.nvlink_domain or gpu.nvlink_domain)


def packing_sizes(gpus_per_server: int, gpus_per_tray: int | None = None) -> list[int]:
    """Sizes a job or replica may take inside one server, each dividing the next.

    Powers of two that divide the placement unit (a compute tray on rack-scale systems, else
    the server), then, on rack-scale systems, whole trays growing by the smallest prime factor
    of what is left up to the server: 1, 2, 4, 8, 24, 72 for 4-GPU trays in a 72-GPU NVL72.

    Why a chain: the optimiser only checks that the GPUs a pool's jobs and replicas hold add up
    to no more than its servers' (``optimize.model._gpu_use``). With sizes that each divide the
    next and the server, any such set packs into whole servers without splitting a group
    (largest first), so every replica and single-server job keeps its NVLink domain. Any
    multiple of the tray would pack as trays, but not within a rack: three 48-GPU jobs fill two
    NVL72 racks' 144 GPUs only if one of them spans both racks, and nine 64-GPU replicas in
    eight racks likewise; a pool without a scale-out fabric has no link between racks at all.
    """
    unit = gpus_per_tray or gpus_per_server
    sizes = [n for n in (1, 2, 4, 8, 16, 32, 64) if n < unit and unit % n == 0]
    size = unit
    while True:
        sizes.append(size)
        if size >= gpus_per_server:
            return sizes
        rest = gpus_per_server // size
        size *= next(p for p in range(2, rest + 1) if rest % p == 0)
