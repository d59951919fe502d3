"""The rest of the bill of materials: front-end and management Ethernet for every racked
server, and shared storage for the training jobs' checkpoints and datasets.

Rules (the optimiser, the purchase list and the verifier use the same):
- every racked server has ``frontend.ports_per_server`` front-end links (one cable each) on
  top-of-rack switches of ``switch_ports`` ports, which also take the storage nodes' links;
- every racked server and every front-end switch has one management link, on switches of
  ``mgmt_switch_ports`` ports;
- storage holds each training job's dataset (tokens x bytes per token) and its last
  ``checkpoints_kept`` checkpoints (parameters x bytes per parameter; a LoRA job's adapters
  are small: its base weights once, in bf16), in nodes of ``tb_per_node``, bought for a
  cluster (a plan with a racked server): a desk-side box keeps its data on its own disks.
Desk-side and edge boxes join the office network: no front-end switch port.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner.catalog import Catalog
from planner.perf.shapes import shape_of
from planner.schema.problem import Problem


@dataclass(frozen=True)
class StoragePlan:
    tb: int  # usable TB bought (whole)
    nodes: int
    ports: int  # front-end ports the nodes take


def storage_for(problem: Problem, catalog: Catalog) -> StoragePlan:
    """What the jobs store on site (nothing for a rent-only problem: the cloud keeps it)."""
    s = catalog.storage
    if not problem.finance.buy:
        return StoragePlan(0, 0, 0)
    total_bytes = 0.0
    for job in problem.training:
        params = shape_of(job.model, catalog).params_b * 1e9
        # adapters are a rounding error beside the base weights, stored once in bf16
        full = job.method == "full"
        state = params * s.checkpoint_bytes_per_param * s.checkpoints_kept if full else params * 2.0
        total_bytes += state + job.tokens * s.dataset_bytes_per_token
    tb = math.ceil(total_bytes / 1e12 - 1e-9) if total_bytes else 0
    nodes = math.ceil(tb / s.tb_per_node) if tb else 0
    return StoragePlan(tb, nodes, nodes * s.ports_per_node)


def frontend_switches(servers: int, storage_ports: int, catalog: Catalog) -> tuple[int, int]:
    """(front-end switches, management switches) for ``servers`` racked servers."""
    f = catalog.frontend
    ports = servers * f.ports_per_server + storage_ports
    switches = math.ceil(ports / f.switch_ports)
    mgmt = math.ceil((servers + switches) / f.mgmt_switch_ports)
    return switches, mgmt
