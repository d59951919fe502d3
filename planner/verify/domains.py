"""Failure domains, re-checked on a placement: each pool's replicas laid out on its servers (or
racks) as an operator would (``planner.domains.domain_losses``), then every domain taken down in
turn. What a service keeps is what is left after its ``spare_replicas`` worst domains, so a plan
whose spares do not survive a failure is caught whatever its rows claim."""

from __future__ import annotations

from planner.domains import Lost, claimed_loss_rps, worst_loss_rps
from planner.limits.measure import capacity_rps
from planner.schema.plan import InferenceRow
from planner.schema.problem import InferenceService


def _year(row: InferenceRow) -> str:
    return "" if row.year is None else f" (year {row.year})"


def check_claims(row: InferenceRow, units: list[Lost], errs: list[str]) -> None:
    """A row may not claim fewer replicas per domain than its placement puts on one, and its
    ``domain_loss_rps`` is what its replica rows count."""
    for i, rep in enumerate(row.replicas):
        most = max((lost.get(i, 0) for lost in units), default=0)
        if most > rep.per_domain:
            errs.append(
                f"service {row.name}{_year(row)}: one {row.spare_domain} holds {most} of its {rep.gpu} "
                f"x{rep.gpus_per_replica} replicas; the plan counts {rep.per_domain}"
            )
    claimed = claimed_loss_rps(row.replicas)
    if abs(row.domain_loss_rps - claimed) > 1e-3:
        errs.append(
            f"service {row.name}{_year(row)}: domain_loss_rps {row.domain_loss_rps:g}, its replicas "
            f"count {claimed:.3f} on the worst {row.spare_domain}"
        )


def check_domains_down(
    svc: InferenceService, row: InferenceRow, need: float, units: list[Lost], errs: list[str]
) -> None:
    """The service's rate with its ``spare_replicas`` worst domains of the placement down."""
    left = capacity_rps(row.replicas) - worst_loss_rps(row, units, svc.spare_replicas)
    if svc.spare_replicas and left + 1e-3 < need * (1 + svc.min_spare_share):
        errs.append(
            f"service {svc.name}{_year(row)}: {left:.3f} rps left with {svc.spare_replicas} "
            f"{svc.spare_domain}(s) down, below {need * (1 + svc.min_spare_share):g}"
        )
