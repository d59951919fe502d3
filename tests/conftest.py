"""Shared helpers: solve small problems written inline."""

from __future__ import annotations

import functools
import os
import tempfile
import textwrap
from pathlib import Path

import pytest

from planner.catalog import Catalog, load_catalog
from planner.io.problem_io import load_problem, loads_problem
from planner.pipeline import plan_problem
from planner.schema.plan import Plan

# The catalogs' parse cache (planner.parse_cache) in a folder of the test run's, not the user's;
# the command lines the tests start inherit it.
os.environ.setdefault("PLANNER_CACHE_DIR", tempfile.mkdtemp(prefix="planner-test-cache-"))


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache folder of the test's own, empty (``planner.parse_cache.cache_dir``): for the tests
    of what runs keep there."""
    monkeypatch.setenv("PLANNER_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def solve_text(text: str, time_limit_s: float | None = None) -> Plan:
    return plan_problem(loads_problem(textwrap.dedent(text), "test.yaml"), time_limit_s)


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return load_catalog()


PROBLEMS = Path(__file__).resolve().parent.parent / "problems"


@functools.cache
def example_plan(name: str) -> Plan:
    """An example problem's plan, solved once per test session (read it, do not change it:
    ``model_copy(deep=True)`` first)."""
    return plan_problem(load_problem(PROBLEMS / name))
