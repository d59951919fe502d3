"""The plan's simulation started before the plan is known: on the first plan the search starts
from, in a worker process, while the solver proves the optimum on its own core.

A small model's search starts from the plan of its start types (``optimize.type_start``), and on
most problems the plan in the end serves each service with the same replicas. A service's
simulation depends only on the service, its plan row, the problem and the catalog, the number of
requests and the seed (``simulate.run``); so where the row the plan ends with is the row the
first plan had, the early result is the result, to the last digit. Where it differs, that
service is simulated again as it would have been. Measured on startup (2 cores): the solve and
its tie-breaks take 0.25 s after the start's plan, the simulation 0.29 s on one core; what is
left of the check after the plan went from 0.18 s to 0.03-0.06 s (waiting for the worker).

The replays are jobs of a few replicas each (``simulate.run.replaying``): the worker takes them
one after the other, and this process, once its search is done, takes those left (startup's
simulation ended 0.05-0.1 s after the search when the worker replayed alone).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from planner.executors import Background

if TYPE_CHECKING:  # imported when used: the command line makes one before the options' workers start
    from planner.context import Context
    from planner.optimize.built import Built
    from planner.optimize.solve import Solved
    from planner.schema.plan import InferenceRow, Plan
    from planner.simulate.run import Replaying, ServiceResult


class Speculation:
    """At most one early simulation, of ``requests`` requests per service (default: as
    ``planner solve`` checks a plan, ``simulate.check.SOLVE_REQUESTS``) from ``seed``."""

    def __init__(self, requests: int | None = None, seed: int = 0) -> None:
        self.requests, self.seed = requests, seed
        self._job: _Early | None = None
        self._first: dict[str, tuple[int, ...]] = {}  # per service: its replicas and routes simulated
        self._same: set[str] = set()  # services the search's plan serves with those

    def started(self, ctx: Context, built: Built, solved: Solved) -> None:
        """Simulate the plan of ``solved`` (a solution of ``built``), in a forked worker: its plan
        is read there too. Once only: the first plan is the likeliest one kept."""
        if self.requests is None:
            from planner.simulate.check import SOLVE_REQUESTS

            self.requests = SOLVE_REQUESTS
        from planner.optimize.floors import FLEET_SERVICES

        # a fleet's services, simulated one after the other in one worker, could take longer than
        # the check's own workers after the search: only a few services are simulated early
        few = len(ctx.problem.inference) < FLEET_SERVICES
        if self._job is None and few and any(s.model is not None for s in ctx.problem.inference):
            self._first = _choices(built, solved)
            self._job = _Early.start(ctx, built, solved, self.requests, self.seed)

    def ended(self, built: Built, solved: Solved) -> None:
        """The search's plan: the services whose replicas and routes are those simulated keep
        their results; with none, the worker is stopped now (its core is free sooner)."""
        final = _choices(built, solved)
        self._same = {name for name, values in self._first.items() if final.get(name) == values}
        if not self._same:
            self.cancel()

    def results(self, plan: Plan, requests: int, seed: int) -> dict[str, ServiceResult]:
        """The early results that hold for ``plan`` simulated with ``requests`` and ``seed``, by
        service name (waiting for them): those of services whose plan row is the one simulated."""
        job, self._job = self._job, None
        if job is None:
            return {}
        if (requests, seed) != (self.requests, self.seed) or not self._same:
            job.cancel()
            return {}
        rows, results = job.result()
        final = peak_rows(plan)
        return {
            r.name: r for r in results if r.name in self._same and r.name in final and final[r.name] == rows.get(r.name)
        }

    def cancel(self) -> None:
        job, self._job = self._job, None
        if job is not None:
            job.cancel()


def _choices(built: Built, solved: Solved) -> dict[str, tuple[int, ...]]:
    """Per service, the values of its replica counts (every kind, every year) and routes: its plan
    row's replicas and routing are read from them alone."""
    out: dict[str, tuple[int, ...]] = {}
    for name, kinds in built.serve.items():
        routes = built.routes.get(name, {})
        counts = [solved.value(r) for _, per_year in kinds for r in per_year]
        out[name] = (*counts, *(solved.value(routes[k]) for k in sorted(routes)))
    return out


def peak_rows(plan: Plan) -> dict[str, InferenceRow]:
    """Per service, the plan row a simulation replays (``from_plan.peak_row``)."""
    from planner.simulate.from_plan import peak_row

    return {row.name: peak_row(plan, row.name) for row in plan.inference}


# jobs per service at most, each of whole replicas: startup's 8 replicas of chat took 0.04 s each,
# so the process that finishes first waits at most about that long for the other
PARTS = 8


class _Early:
    """The first plan's rows and its services' replay jobs, taken by one forked worker from now
    and by this process when it collects (``executors.Background``)."""

    def __init__(self, rows: dict[str, InferenceRow], services: list[Replaying], job: Background) -> None:
        self.rows, self.services, self.job = rows, services, job

    @classmethod
    def start(cls, ctx: Context, built: Built, solved: Solved, requests: int, seed: int) -> _Early | None:
        from planner.assemble import assemble_plan
        from planner.errors import PlannerError
        from planner.io.problem_io import LoadedProblem
        from planner.simulate.fleet import replay_alone
        from planner.simulate.from_plan import Skipped, service_specs
        from planner.simulate.run import replaying

        plan = assemble_plan(ctx, built, solved)
        base = ctx.loaded or LoadedProblem(ctx.problem, file=ctx.problem.name, lines={})
        try:
            specs = service_specs(plan, base, ctx.catalog)
        except PlannerError:  # the plan's own simulation says why, if it has the same trouble
            return None
        services = [
            replaying(spec, requests, seed, stream, PARTS)
            for stream, spec in enumerate(specs)
            if not isinstance(spec, Skipped)
        ]
        job = Background.start(replay_alone, [each for s in services for each in s.jobs])
        return None if job is None else cls(peak_rows(plan), services, job)

    def result(self) -> tuple[dict[str, InferenceRow], list[ServiceResult]]:
        from planner.simulate.run import replayed

        found = iter(self.job.result())  # in the jobs' order: each service's, one after the other
        return self.rows, [replayed(s, [next(found) for _ in s.jobs]) for s in self.services]

    def cancel(self) -> None:
        self.job.cancel()
