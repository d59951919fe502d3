"""planner: what GPUs, network and racks to buy, at the lowest multi-year cost, and why."""

__version__ = "0.1.0"
