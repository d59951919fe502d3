"""The smallest job size that finishes in time (``options.training._smallest_in_time``) is searched
from a guess (days about 1 / GPUs) in growing steps, then halved: it must find what a scan of
every size finds, whatever the guess, for any predicate that turns true once and stays true."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from planner.catalog import load_catalog
from planner.fabric import fits
from planner.io.problem_io import load_problem
from planner.options.training import _smallest_in_time, estimate_job, job_sizes
from planner.perf.shapes import shape_of
from planner.perf.training import TrainingEstimate

ROOT = Path(__file__).resolve().parent.parent


@given(
    st.lists(st.integers(1, 4096), min_size=1, max_size=300, unique=True),
    st.floats(0.01, 400.0),
    st.floats(0.2, 3.0),
    st.integers(0, 50),
    st.floats(1.0, 300.0),
)
@settings(max_examples=400, deadline=None)
def test_the_search_finds_the_smallest_size_in_time(
    raw: list[int], work: float, power: float, unfit: int, window: float
) -> None:
    """Days work / n^power (any speed-up, better or worse than linear), the smallest ``unfit``
    sizes out of memory: the answer is the first size a scan finds in time."""
    sizes = sorted(raw)
    asked: list[int] = []

    def estimate(n: int) -> TrainingEstimate:
        asked.append(n)
        return TrainingEstimate(fits=sizes.index(n) >= unfit, days=work / n**power, reason="out of memory")

    found, _ = _smallest_in_time(sizes, estimate, window)
    scan = [n for n in sizes if sizes.index(n) >= unfit and work / n**power <= window]
    if not scan or scan[-1] != sizes[-1]:  # the largest size must be in time for any answer
        assert found is None
    else:
        assert found == scan[0]
    assert set(asked) <= set(sizes)


def test_real_jobs_get_the_size_a_scan_finds() -> None:
    """Every pool of the catalog, the startup and lab jobs: the same smallest size as a scan of
    the sizes (the estimator, not a model of it; the sizes capped at 64 servers to keep it short)."""
    catalog = load_catalog()
    checked = 0
    for name in ("startup", "lab-train-and-serve"):
        problem = load_problem(ROOT / "problems" / f"{name}.yaml").problem
        for job in problem.training:
            shape = shape_of(job.model, catalog)
            for chassis in catalog.servers.values():
                for gpu_id in chassis.gpus:
                    for fabric in catalog.fabrics.values():
                        if fits(fabric, chassis):
                            est = partial(estimate_job, job, shape, catalog, chassis, catalog.gpus[gpu_id], fabric)
                            checked += _same_as_a_scan(job_sizes(chassis, fabric, 64), est, job.deadline_days)
    assert checked > 100  # the test saw real boundaries, not only refusals


def _same_as_a_scan(sizes: Sequence[int], est: Callable[[int], TrainingEstimate], window: float) -> int:
    """1 when a size is in time and the search found the smallest, 0 when none is and it found none."""
    found, _ = _smallest_in_time(sizes, est, window)
    in_time = [n for n in sizes if est(n).fits and est(n).days <= window]
    if not in_time or in_time[-1] != sizes[-1]:
        assert found is None
        return 0
    assert found == in_time[0]
    return 1


def test_a_zero_day_window_met_in_zero_days_takes_the_smallest_size() -> None:
    """The guess divides by the window: a job done in no time within no time is still answered."""
    found, _ = _smallest_in_time([1, 2, 4, 8], lambda n: TrainingEstimate(fits=True, days=0.0), 0.0)
    assert found == 1
