"""The link a group of GPUs in one server talks over."""

from __future__ import annotations

from planner.perf.inference import Link
from planner.schema.catalog import Gpu, ServerChassis


def link_for(chassis: ServerChassis, gpu: Gpu, gpus: int) -> Link:
    """The link a group of ``gpus`` in one server talk over: NVLink-class inside its domain."""
    fast = gpu.nvlink_gb_per_s > 0 and gpus <= gpu.nvlink_domain
    if not fast:
        return Link("pcie", gpu.host_link_gb_per_s)
    kind = chassis.gpu_link if chassis.gpu_link != "pcie" else "nvlink"
    return Link(kind, (chassis.gpu_link_gb_per_s or gpu.nvlink_gb_per_s) / 2)
