"""A problem file's validated ``Problem``, kept between runs (``planner.kept``).

pydantic builds the validators of the problem schema's classes before it validates a first
problem: 0.025 s of `planner solve problems/startup.yaml` (measured: the options' workers forked
0.027 s later), which a run that reads the problem as kept never pays (the classes are declared
``defer_build``). The key holds the data as read, after a mix's CSV is bucketed, as ``repr``
(which tells 1 from 1.0 and "1", and a date from its text), and the source of every schema
module. Each problem file (by its absolute path) has one entry, the one for its current data;
beyond ``KEEP_FILES`` files, the entries written longest ago go.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from planner.kept import Kept, file_name, forget_oldest

if TYPE_CHECKING:
    from planner.schema.problem import Problem

# Every module of the problem file's schema: a problem holds classes of the catalog's too (its
# own GPUs and servers); the plan's schema is the planner's output, not a problem's.
SOURCES = (
    "planner.schema.base",
    "planner.schema.catalog",
    "planner.schema.efficiency",
    "planner.schema.fabric",
    "planner.schema.facility",
    "planner.schema.model_ref",
    "planner.schema.problem",
    "planner.schema.service",
    "planner.schema.serving",
    "planner.schema.traffic",
)
KEEP_FILES = 64
STEM = "problem"


def validated(file: Path, data: Any) -> Problem:
    """``Problem.model_validate(data)`` (``data`` read from ``file``), or the problem it gave for
    the same data and schema before."""
    from planner.schema.problem import Problem

    for module in SOURCES:  # the key reads their source; most are imported already
        importlib.import_module(module)
    made = []

    def build() -> Problem:
        made.append(True)
        return Problem.model_validate(data)

    problem = Kept(f"{STEM}-{file_name(file)}", SOURCES).built_once({"data": repr(data)}, Problem, build)
    if made:
        forget_oldest(STEM, KEEP_FILES)
    return problem
