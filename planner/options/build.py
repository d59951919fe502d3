"""Every way each workload could be deployed: feasible options with their figures,
and for every GPU that cannot serve a workload, the reason.

An option fixes the GPU, the server chassis, the fabric, the precision and the
parallelism; the optimiser only chooses how many of each to use.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace

from planner.bom import PoolKey, max_ports, per_rack, pool_spec
from planner.catalog import Catalog
from planner.perf.inference import InferenceEstimate, InferenceQuery, Link, estimate_inference, max_tp_candidates
from planner.perf.shapes import ModelShape, shape_of
from planner.perf.training import TrainingEstimate, TrainingQuery, estimate_training, gpu_counts
from planner.pricing import server_price_usd
from planner.schema.catalog import Gpu, ServerChassis
from planner.schema.problem import InferenceService, MeasuredThroughput, Problem, TrainingJob


@dataclass(frozen=True)
class InferenceOption:
    service: str
    pool: PoolKey
    precision: str
    gpus_per_replica: int
    estimate: InferenceEstimate
    measured: bool = False  # from the user's benchmark, not the model
    rent_usd_per_gpu_hour: float | None = None  # set: rented from a cloud for the whole horizon
    # a service with a request-size mix: this kind's figures per bucket (None: cannot meet its targets)
    buckets: tuple[InferenceEstimate | None, ...] = ()

    @property
    def gpu(self) -> str:
        return self.pool.gpu

    @property
    def rps_per_replica(self) -> float:
        """Planning capacity: the replica's throughput at the headroom utilisation."""
        return self.estimate.planning_requests_per_s

    def bucket_rps(self, k: int) -> float:
        """Planning capacity of a replica serving only bucket ``k`` of the mix (0: it cannot)."""
        e = self.buckets[k]
        return e.planning_requests_per_s if e is not None else 0.0

    @property
    def capacities(self) -> tuple[float, ...]:
        return tuple(self.bucket_rps(k) for k in range(len(self.buckets))) or (self.rps_per_replica,)


@dataclass(frozen=True)
class TrainingOption:
    job: str
    pool: PoolKey
    gpus: int
    estimate: TrainingEstimate
    rent_usd_per_gpu_hour: float | None = None  # set: rented from a cloud for the job's duration

    @property
    def gpu(self) -> str:
        return self.pool.gpu

    @property
    def days(self) -> float:
        return self.estimate.days


@dataclass(frozen=True)
class Rejection:
    gpu: str
    server: str
    reason: str


@dataclass
class WorkloadOptions:
    name: str
    kind: str  # training | inference
    shape: ModelShape | None  # None: a generic service planned from measurements

    @property
    def label(self) -> str:
        return self.shape.name if self.shape else "generic"

    inference: list[InferenceOption] = field(default_factory=list)
    training: list[TrainingOption] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)

    @property
    def feasible(self) -> bool:
        return bool(self.inference or self.training)

    def reasons_by_gpu(self) -> dict[str, list[str]]:
        usable = {o.gpu for o in self.inference} | {o.gpu for o in self.training}
        out: dict[str, list[str]] = {}
        for r in self.rejected:
            if r.gpu not in usable and r.reason not in out.setdefault(r.gpu, []):
                out[r.gpu].append(r.reason)
        return out


def link_for(chassis: ServerChassis, gpu: Gpu, gpus: int) -> Link:
    """The link a group of ``gpus`` in one server talk over: NVLink-class inside its domain."""
    fast = gpu.nvlink_gb_per_s > 0 and gpus <= gpu.nvlink_domain
    if not fast:
        return Link("pcie", gpu.host_link_gb_per_s)
    kind = chassis.gpu_link if chassis.gpu_link != "pcie" else "nvlink"
    return Link(kind, (chassis.gpu_link_gb_per_s or gpu.nvlink_gb_per_s) / 2)


# Pools beyond these sizes are outside what the model describes (two-tier networks,
# a single site): a cap, not a limit anyone would want to relax.
MAX_SERVERS_PER_POOL = 100_000
RELAXABLE_BOUNDS = ("budget", "site_power", "racks")


def pool_limit(problem: Problem, catalog: Catalog, key: PoolKey, ignore: Collection[str] = ()) -> tuple[int, str]:
    """An upper bound on servers in a pool, with the reason when it is 0.

    Physical bounds (one server must fit a rack; stock) reject a pool outright.
    The site's budget, power and racks also bound it, unless named in ``ignore``:
    a diagnosis relaxes those limits and must not be cut off by them.
    """
    spec = pool_spec(catalog, key)
    site = problem.site
    fit = per_rack(spec.rack_units, spec.power_w, site.rack_units, site.rack_power_kw)
    if fit == 0:
        return 0, (
            f"one {key.server} server ({spec.rack_units}U, {spec.power_w / 1000:.1f} kW) does not fit "
            f"a {site.rack_units}U / {site.rack_power_kw:g} kW rack"
        )
    fabric = catalog.fabrics[key.fabric]
    bounds = [MAX_SERVERS_PER_POOL]
    if spec.nics_per_server:
        bounds.append(max_ports(fabric) // spec.nics_per_server)
    stock = {catalog.gpu(k).id: v for k, v in problem.catalog.stock.items()}
    if key.gpu in stock:  # per year: a plan by year may buy it every year
        bounds.append(stock[key.gpu] // spec.gpus_per_server * (problem.horizon_years if problem.yearly else 1))
        if bounds[-1] == 0:
            return 0, f"stock: only {stock[key.gpu]} x {key.gpu} available, a server holds {spec.gpus_per_server}"
    if site.racks is not None and "racks" not in ignore:
        bounds.append(site.racks * fit)
    if site.power_kw is not None and "site_power" not in ignore:
        bounds.append(int(site.power_kw * 1000 / problem.finance.pue // spec.power_w))
    if problem.finance.budget_usd is not None and "budget" not in ignore:
        cheapest = server_price_usd(spec, catalog, problem, problem.horizon_years - 1 if problem.yearly else 0)
        bounds.append(int(problem.finance.budget_usd // cheapest))
    return min(bounds), ""


def build_options(problem: Problem, catalog: Catalog, slower: bool = False) -> list[WorkloadOptions]:
    """Every workload's options. ``slower`` adds, for a diagnosis, training sizes that
    miss the deadline, so that "extend the deadline to D" can be measured."""
    limits: dict[PoolKey, tuple[int, str]] = {}

    def limit(key: PoolKey) -> tuple[int, str]:
        if key not in limits:
            # Options ignore the relaxable site limits: when they rule a GPU out, the
            # solver's diagnosis says by how much, instead of the GPU vanishing here.
            limits[key] = pool_limit(problem, catalog, key, ignore=RELAXABLE_BOUNDS)
        return limits[key]

    dependents = {d.lower() for j in problem.training for d in j.after}
    from planner.dominance import prune_training

    by_name: dict[str, WorkloadOptions] = {}
    earliest_end: dict[str, float] = {}
    for job in _topological(problem.training):
        # A job cannot start before its predecessors can possibly end: size it for that window.
        start = max([job.release_day, *(earliest_end[d.lower()] for d in job.after)])
        in_chain = job.name.lower() in dependents or bool(job.after)
        wo = _training_options(job, problem, catalog, limit, in_chain, slower, start)
        fastest = min((o.days for o in wo.training), default=float("inf"))
        earliest_end[job.name.lower()] = start + fastest
        by_name[job.name] = wo
    out = [by_name[job.name] for job in problem.training]
    if not slower:  # pruning weighs days only for jobs in a chain: not for a relaxed deadline
        # Servers of a pool two jobs could use may be shared over time: no pruning there.
        users: dict[PoolKey, set[str]] = {}
        for wo in out:
            for o in wo.training:
                users.setdefault(o.pool, set()).add(wo.name)
        shared = {k for k, names in users.items() if len(names) > 1}
        for job, wo in zip(problem.training, out, strict=True):
            in_chain = job.name.lower() in dependents or bool(job.after)
            wo.training = prune_training(wo.training, problem, catalog, in_chain, shared)
    out += [_inference_options(svc, catalog, limit) for svc in problem.inference]
    if problem.finance.rent != "none":
        for wo in out:
            _add_rentals(wo, catalog, problem.finance.rent)
    if not problem.finance.buy:  # rent only
        for wo in out:
            owned = [o for o in [*wo.inference, *wo.training] if o.rent_usd_per_gpu_hour is None]
            wo.rejected += [
                Rejection(o.gpu, o.pool.server, "rent only (finance.buy: false), no cloud price") for o in owned
            ]
            wo.inference = [o for o in wo.inference if o.rent_usd_per_gpu_hour is not None]
            wo.training = [o for o in wo.training if o.rent_usd_per_gpu_hour is not None]
    return out


def _add_rentals(wo: WorkloadOptions, catalog: Catalog, pricing: str) -> None:
    """Rented twins of the options whose GPU a cloud offers.

    A rented option is the same hardware and the same figures, paid by the hour:
    services for the whole horizon (at the reserved price when asked), training
    jobs for their duration (on demand: nobody commits for years to a burst).
    """
    served: dict[tuple, InferenceOption] = {}  # type: ignore[type-arg]
    for o in wo.inference:
        price = catalog.rent_usd_per_gpu_hour(o.gpu, pricing)
        # a cloud GPU is the same in any chassis: one rented twin per (GPU, precision, size)
        twin = (o.gpu, o.precision, o.gpus_per_replica)
        if price is not None and o.rent_usd_per_gpu_hour is None and twin not in served:
            served[twin] = replace(o, rent_usd_per_gpu_hour=price)
    wo.inference.extend(served.values())
    best: dict[tuple[str, int], TrainingOption] = {}
    for t in wo.training:
        price = catalog.rent_usd_per_gpu_hour(t.gpu, "on_demand")
        if price is None:
            continue
        key = (t.gpu, t.gpus)  # a cloud job costs GPU-hours: keep the fastest of each size
        if key not in best or t.days < best[key].days:
            best[key] = replace(t, rent_usd_per_gpu_hour=price)
    wo.training.extend(best[k] for k in sorted(best))


def _inference_options(svc: InferenceService, catalog: Catalog, limit) -> WorkloadOptions:  # type: ignore[no-untyped-def]
    shape = shape_of(svc.model, catalog) if svc.model is not None else None
    wo = WorkloadOptions(svc.name, "inference", shape)
    # the user's benchmarks, by (GPU, precision, GPUs per replica); excluded GPUs drop out
    measured = {
        (gid, m.precision, m.gpus_per_replica): m
        for m in svc.measured
        if (gid := catalog.find_gpu_id(m.gpu)) is not None
    }
    for chassis in catalog.servers.values():
        for gpu_id in chassis.gpus:
            gpu = catalog.gpus[gpu_id]
            key = PoolKey(chassis.id, gpu_id, "none")
            cap, why = limit(key)
            if cap == 0:
                wo.rejected.append(Rejection(gpu_id, chassis.id, why))
                continue
            found: list[InferenceOption] = []
            tps = max_tp_candidates(chassis.gpus_per_server)
            for precision in svc.precisions if shape is not None and svc.mix is None else []:
                for tp in tps:
                    if (gpu_id, precision, tp) in measured:
                        continue  # measured numbers win (below)
                    est = _at_targets(
                        svc, shape, catalog, chassis, gpu, tp, precision, svc.input_tokens, svc.output_tokens
                    )
                    if est.fits:
                        found.append(InferenceOption(svc.name, key, precision, tp, est))
                    else:
                        wo.rejected.append(Rejection(gpu_id, chassis.id, f"{precision} TP{tp}: {est.reason}"))
            if svc.mix is not None:
                found += _mix_options(svc, catalog, chassis, gpu, key, tps, wo)
                wo.inference.extend(_undominated(found))
                continue
            for (gid, precision, tp), entry in measured.items():
                if gid != gpu_id:
                    continue
                reason = _measured_problem(svc, entry, tp, tps)
                if reason:
                    wo.rejected.append(Rejection(gpu_id, chassis.id, f"measured {precision} x{tp}: {reason}"))
                else:
                    found.append(InferenceOption(svc.name, key, precision, tp, _measured_estimate(svc, entry), True))
            wo.inference.extend(_undominated(found))
    if svc.generic and not wo.inference and not wo.rejected:
        wo.rejected.append(Rejection("-", "-", "no measured GPU is in the catalog after exclusions"))
    return wo


def _at_targets(
    svc: InferenceService,
    shape: ModelShape,
    catalog: Catalog,
    chassis: ServerChassis,
    gpu: Gpu,
    tp: int,
    precision: str,
    input_tokens: int,
    output_tokens: int,
) -> InferenceEstimate:
    """One replica kind on requests of one size, at the largest batch meeting the service's targets."""
    q = InferenceQuery(
        model=shape,
        gpu=gpu,
        gpus=tp,
        precision=precision,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        link=link_for(chassis, gpu, tp),
        tpot_ms=svc.tpot_ms,
        ttft_ms=svc.ttft_ms,
    )
    eff = catalog.efficiency
    return estimate_inference(q, eff.generations[gpu.generation], eff.serving)


def _mix_options(  # type: ignore[no-untyped-def]
    svc: InferenceService, catalog: Catalog, chassis: ServerChassis, gpu: Gpu, key: PoolKey, tps: list[int], wo
) -> list[InferenceOption]:
    """Replica kinds for a request-size mix: each bucket estimated at its own sizes (or taken
    from the user's per-bucket measurement); a kind is kept if it serves any bucket."""
    assert svc.mix is not None
    buckets = svc.mix.sized
    labels = [b.label.lower() for b in buckets]
    measured: dict[tuple[str, int], dict[int, MeasuredThroughput]] = {}
    for m in svc.measured:
        if catalog.find_gpu_id(m.gpu) == gpu.id and m.bucket is not None:
            measured.setdefault((m.precision, m.gpus_per_replica), {})[labels.index(m.bucket.lower())] = m
    kinds = sorted(set(measured) | ({(p, tp) for p in svc.precisions for tp in tps} if wo.shape else set()))
    found = []
    for precision, tp in kinds:
        if tp not in tps:
            wo.rejected.append(Rejection(gpu.id, chassis.id, f"measured x{tp}: does not pack into this server"))
            continue
        per: list[InferenceEstimate | None] = []
        reasons = []
        for k, bucket in enumerate(buckets):
            entry = measured.get((precision, tp), {}).get(k)
            if entry is not None:
                bad = _measured_problem(svc, entry, tp, tps)
                per.append(None if bad else _measured_estimate(svc, entry, bucket.output_tokens))
                reasons += [f"{bucket.label}: {bad}"] if bad else []
                continue
            if wo.shape is None or precision not in svc.precisions:
                per.append(None)
                continue
            est = _at_targets(
                svc, wo.shape, catalog, chassis, gpu, tp, precision, bucket.input_tokens, bucket.output_tokens
            )
            per.append(est if est.fits else None)
            reasons += [] if est.fits else [f"{bucket.label}: {est.reason}"]
        served = [e for e in per if e is not None]
        if not served:
            wo.rejected.append(Rejection(gpu.id, chassis.id, f"{precision} x{tp}: no bucket fits ({reasons[0]})"))
            continue
        representative = max(served, key=lambda e: e.tpot_p99_ms)  # the slowest bucket it serves
        is_measured = (precision, tp) in measured
        found.append(InferenceOption(svc.name, key, precision, tp, representative, is_measured, None, tuple(per)))
    return found


def _measured_problem(svc: InferenceService, entry: MeasuredThroughput, tp: int, tps: list[int]) -> str:
    if tp not in tps:
        return f"{tp} GPUs per replica do not pack into this server (one of {tps})"
    if svc.generic:
        return ""
    if entry.precision not in svc.precisions:
        return f"precision {entry.precision} is not in this service's precisions"
    if entry.ttft_ms is not None and entry.ttft_ms > svc.ttft_ms:
        return f"your measured TTFT {entry.ttft_ms:g} ms misses the {svc.ttft_ms:g} ms target"
    if entry.tpot_ms is not None and entry.tpot_ms > svc.tpot_ms:
        return f"your measured TPOT {entry.tpot_ms:g} ms misses the {svc.tpot_ms:g} ms target"
    return ""


def _measured_estimate(
    svc: InferenceService, entry: MeasuredThroughput, output_tokens: int | None = None
) -> InferenceEstimate:
    """A user's benchmark, dressed as an estimate: taken as is, no headroom taken off."""
    rps = entry.requests_per_s
    tokens = 0.0 if svc.generic else rps * (output_tokens or svc.output_tokens)
    return InferenceEstimate(
        fits=True,
        requests_per_s=rps,
        planning_requests_per_s=rps,
        output_tokens_per_s=tokens,
        output_tokens_per_s_per_gpu=tokens / entry.gpus_per_replica,
        ttft_ms=entry.ttft_ms or 0.0,
        tpot_ms=entry.tpot_ms or 0.0,
        ttft_p99_ms=entry.ttft_ms or 0.0,
        tpot_p99_ms=entry.tpot_ms or 0.0,
        factors={"source": "measured (problem file)"},
    )


def _undominated(found: list[InferenceOption]) -> list[InferenceOption]:
    """Drop an option when replicas of another option on the same pool, using the same GPUs,
    serve at least as much (``b.tp / a.tp`` replicas of ``a`` replace one of ``b``)."""
    keep = []
    for b in found:
        beaten = any(
            a is not b
            and b.gpus_per_replica % a.gpus_per_replica == 0
            and all(
                (b.gpus_per_replica // a.gpus_per_replica) * ca >= cb
                for ca, cb in zip(a.capacities, b.capacities, strict=True)
            )
            and (a.gpus_per_replica, -a.rps_per_replica, a.precision)
            < (b.gpus_per_replica, -b.rps_per_replica, b.precision)
            for a in found
        )
        if not beaten:
            keep.append(b)
    return keep


def _topological(jobs: list[TrainingJob]) -> list[TrainingJob]:
    """Jobs after the jobs they wait on (the schema has already refused cycles)."""
    done: dict[str, TrainingJob] = {}
    pending = list(jobs)
    while pending:
        ready = [j for j in pending if all(d.lower() in done for d in j.after)]
        for j in ready:
            done[j.name.lower()] = j
        pending = [j for j in pending if j.name.lower() not in done]
    return list(done.values())


def _training_options(
    job: TrainingJob,
    problem: Problem,
    catalog: Catalog,
    limit,  # type: ignore[no-untyped-def]
    has_dependents: bool,
    slower: bool = False,
    earliest_start: float | None = None,
) -> WorkloadOptions:
    shape = shape_of(job.model, catalog)
    wo = WorkloadOptions(job.name, "training", shape)
    start = job.release_day if earliest_start is None else earliest_start
    window = job.deadline_days - start
    eff = catalog.efficiency
    for chassis in catalog.servers.values():
        for gpu_id in chassis.gpus:
            gpu = catalog.gpus[gpu_id]
            for fabric in catalog.fabrics.values():
                if fabric.kind != "none" and chassis.scaleout_nics == 0:
                    continue
                key = PoolKey(chassis.id, gpu_id, fabric.id)
                cap, why = limit(key)
                if cap == 0:
                    wo.rejected.append(Rejection(gpu_id, chassis.id, why))
                    continue
                if fabric.kind == "none":
                    sizes = gpu_counts(chassis.gpus_per_server, 1)
                else:  # whole servers, 2..cap of them (a lazy range: caps can be large)
                    sizes = range(
                        2 * chassis.gpus_per_server, (cap + 1) * chassis.gpus_per_server, chassis.gpus_per_server
                    )

                def estimate(n: int, chassis=chassis, gpu=gpu, fabric=fabric) -> TrainingEstimate:  # type: ignore[no-untyped-def]
                    q = TrainingQuery(
                        model=shape,
                        gpu=gpu,
                        gpus=n,
                        tokens=job.tokens,
                        precision=job.precision,
                        method=job.method,
                        fabric=fabric,
                        gpus_per_server=chassis.gpus_per_server,
                        gpu_link=link_for(chassis, gpu, min(n, chassis.gpus_per_server)).kind,
                        seq_len=job.seq_len,
                        mfu=job.mfu,
                    )
                    return estimate_training(
                        q, eff.generations[gpu.generation], eff.training, eff.serving.memory_reserve_fraction
                    )

                chosen, reason = _smallest_in_time(sizes, estimate, window)
                picks = [] if chosen is None else [chosen] + (_faster_sizes(chosen, sizes) if has_dependents else [])
                limit_days = window
                if slower:
                    limit_days = problem.horizon_years * 365.0 - start
                    picks = sorted(set(picks) | set(_slower_sizes(sizes, estimate, limit_days, chosen)))
                if not picks:
                    if sizes:
                        wo.rejected.append(Rejection(gpu_id, chassis.id, f"{fabric.id}: {reason}"))
                    continue
                for n in picks:
                    est = estimate(n)
                    if est.fits and est.days <= limit_days:
                        wo.training.append(TrainingOption(job.name, key, n, est))
    return wo


def _smallest_in_time(sizes: Sequence[int], estimate, window: float) -> tuple[int | None, str]:  # type: ignore[no-untyped-def]
    """The smallest size that fits in memory and finishes within the window.

    Larger jobs finish sooner (scaling losses are small per doubling), so the
    search is a binary search over the sorted sizes.
    """
    if not sizes:
        return None, "no job size available"
    largest = estimate(sizes[-1])
    if not largest.fits:
        return None, largest.reason
    if largest.days > window:
        return None, f"{largest.days:.1f} days even on {sizes[-1]} GPUs > {window:g}-day window"
    lo, hi = 0, len(sizes) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        e = estimate(sizes[mid])
        if e.fits and e.days <= window:
            hi = mid
        else:
            lo = mid + 1
    return sizes[lo], ""


def _slower_sizes(sizes: Sequence[int], estimate, longest_days: float, chosen: int | None) -> list[int]:  # type: ignore[no-untyped-def]
    """Sizes from the smallest that finishes within the horizon up to the deadline's size.

    Every size up to 16 servers' worth, then steps of about 10%: a deadline fix found
    with them is exact to within one step of job size.
    """
    smallest, _ = _smallest_in_time(sizes, estimate, longest_days)
    if smallest is None:
        return []
    top = chosen if chosen is not None else sizes[-1]
    lo = bisect.bisect_left(sizes, smallest)
    hi = bisect.bisect_right(sizes, top)
    out: list[int] = []
    i = lo
    while i < hi:
        out.append(sizes[i])
        step = 1 if i - lo < 16 else max(1, (i - lo) // 10)
        i += step
    return out


def _faster_sizes(chosen: int, sizes: Sequence[int]) -> list[int]:
    """Larger sizes for jobs others wait on: finishing sooner gives successors time."""
    out: list[int] = []
    for factor in (1.5, 2.0, 4.0):
        i = bisect.bisect_left(sizes, math.ceil(chosen * factor))
        if i < len(sizes) and sizes[i] != chosen and sizes[i] not in out:
            out.append(sizes[i])
    return out
