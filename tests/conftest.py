"""Shared helpers: solve small problems written inline."""

from __future__ import annotations

import textwrap

import pytest

from planner.catalog import Catalog, load_catalog
from planner.io.problem_io import loads_problem
from planner.pipeline import plan_problem
from planner.schema.plan import Plan


def solve_text(text: str, time_limit_s: float | None = None) -> Plan:
    return plan_problem(loads_problem(textwrap.dedent(text), "test.yaml"), time_limit_s)


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return load_catalog()
