"""Failure domains, re-checked on a placement: each pool's replicas laid out on its servers (or
racks) as an operator would (``planner.domains.domain_losses``), then every domain taken down in
turn. What a service keeps is what is left after its ``spare_replicas`` worst domains, so a plan
whose spares do not survive a failure is caught whatever its rows claim."""

from __future__ import annotations

from planner.domains import Lost
from planner.schema.plan import InferenceRow


def check_claims(row: InferenceRow, units: list[Lost], errs: list[str]) -> None:
    """A row may not claim fewer replicas per domain than its placement puts on one."""
    for i, rep in enumerate(row.replicas):
        most = max((lost.get(i, 0) for lost in units), default=0)
        if most > rep.per_domain:
            year = "" if row.year is None else f" (year {row.year})"
            errs.append(
                f"service {row.name}{year}: one {row.spare_domain} holds {most} of its {rep.gpu} "
                f"x{rep.gpus_per_replica} replicas; the plan counts {rep.per_domain}"
            )
