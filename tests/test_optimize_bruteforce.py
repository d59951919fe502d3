"""CP-SAT's optimum agrees with a brute-force enumeration on small random problems.

Both sides work from the same options (the physics is tested elsewhere); the
enumeration prices every candidate independently of the CP-SAT model: servers
from GPU counts, racks from the fit rule, the network from the port count (and, on a
rail-optimised fabric, the ports per rail), money from finance.summarize. Disaggregated
prefill and decode kinds among the options are enumerated too: a KV group serves the smaller of
its phases' capacities, and a fabric pool holds at least the servers whose NICs carry its caches.
"""

from __future__ import annotations

import itertools
import math
import random
from collections import defaultdict

import pytest

from planner import units as u
from planner.bom import per_rack, pool_spec, servers_per_rack
from planner.catalog import load_catalog
from planner.fabric import network_for, rail_ports
from planner.finance import LineItem, Rates, summarize
from planner.frontend import StoragePlan, frontend_switches, storage_for
from planner.io.problem_io import loads_problem
from planner.options.pools import pool_limit
from planner.pipeline import Context, plan_context, prepare

GPUS = ["L4", "L40S", "A10", "H100-PCIe", "RTX-4090", "A100-PCIe-80GB", "T4", "H100-SXM", "MI300X"]


def _random_problem(rng: random.Random) -> str:
    keep = rng.sample(GPUS, 3)
    exclude = [g for g in load_catalog().gpus if g not in keep]
    model = rng.choice(["llama-3.1-8b", "mistral-7b", "qwen2.5-7b"])
    budget = rng.choice(["", f"budget_usd: {rng.randint(40, 400) * 1000}"])
    power = rng.choice(["", f"power_kw: {rng.randint(3, 30)}"])
    racks = rng.choice(["", f"racks: {rng.randint(1, 3)}"])
    training = ""
    if rng.random() < 0.5:
        training = f"""
training:
  - name: tune
    model: llama-2-7b
    method: lora
    tokens: {rng.choice([2e8, 5e8, 1e9])}
    deadline_days: {rng.randint(3, 20)}
"""
    return f"""
name: random
horizon_years: {rng.randint(1, 5)}
finance:
  electricity_usd_per_kwh: {rng.choice([0.05, 0.12, 0.3])}
  {budget}
site:
  rack_power_kw: {rng.choice([8, 17, 30])}
  {power}
  {racks}
catalog:
  exclude: [{", ".join(exclude)}]
policy:
  allow: [end-of-life, consumer, workstation]  # the random GPU sets include such cards on purpose
  simplicity_tolerance: 0  # the least TCO, which the enumeration finds
inference:
  - name: svc
    model: {model}
    precisions: [bf16, fp8, int4]
    requests_per_s: {rng.choice([0.5, 2, 5, 12])}
    input_tokens: {rng.choice([256, 1024, 2048])}
    output_tokens: {rng.choice([128, 256])}
    tpot_ms: {rng.choice([40, 80, 150])}
    ttft_ms: 3000
    spare_replicas: {rng.choice([0, 0, 1])}
{training}
"""


def _trim(ctx: Context, rng: random.Random) -> None:
    """Keep a few options per workload so the enumeration stays small (fewer when spares
    multiply the replica counts to enumerate)."""
    keep = 3 if ctx.problem.inference[0].spare_replicas else 4
    for w in ctx.workloads:
        if w.inference:
            w.inference = rng.sample(w.inference, min(keep, len(w.inference)))
        if w.training:
            w.training = rng.sample(w.training, min(3, len(w.training)))


def _brute_force(ctx: Context) -> float | None:
    p = ctx.problem
    rates = Rates.of(p)
    svc = next(w for w in ctx.workloads if w.kind == "inference")
    spec = p.inference[0]
    need = u.rps_up(spec.requests_per_s)
    per = [u.rps_down(o.rps_per_replica) for o in svc.inference]
    units = [_unit_gpus(ctx, o) for o in svc.inference]
    ranges = [range(math.ceil(need / r) + spec.spare_replicas * n + 1) for r, n in zip(per, units, strict=True)]
    jobs = [w for w in ctx.workloads if w.kind == "training"]
    job_choices = list(itertools.product(*[w.training for w in jobs])) if jobs else [()]
    best = None
    for counts in itertools.product(*ranges):
        cap = _capacity(svc.inference, counts, per)
        if cap < need:
            continue
        if spec.spare_replicas and not _survives_a_server(svc.inference, counts, per, units, need):
            continue
        for picks in job_choices:
            gpus: dict = defaultdict(int)
            for c, o in zip(counts, svc.inference, strict=True):
                gpus[o.pool] += c * o.gpus_per_replica
            for o in picks:
                gpus[o.pool] += o.held_gpus  # the job's GPUs and its hot spares
            tco = _price(ctx, gpus, rates, _nic_servers(ctx, svc.inference, counts))
            if tco is not None and (best is None or tco < best):
                best = tco
    return best


def _capacity(options, counts, per) -> int:
    """Aggregated replicas each serve their own rate; a disaggregated KV group serves as much
    as the smaller of its prefill and its decode replicas."""
    total = 0
    groups: dict = defaultdict(lambda: {"prefill": 0, "decode": 0})
    for o, c, r in zip(options, counts, per, strict=True):
        if o.mode == "aggregated":
            total += c * r
        else:
            groups[o.kv_group][o.mode] += c * r
    return total + sum(min(g.values()) for g in groups.values())


def _nic_servers(ctx: Context, options, counts) -> dict:
    """Servers a fabric pool needs for the KV caches its prefill replicas send (or its decode
    replicas take in) at their planning rate, at the fabric's link efficiency."""
    out: dict = defaultdict(lambda: {"prefill": 0.0, "decode": 0.0})
    for o, c in zip(options, counts, strict=True):
        if o.mode != "aggregated" and o.pool.fabric != "none":
            out[o.pool][o.mode] += c * math.ceil(o.rps_per_replica * o.kv_gb_per_request * 1000)
    need = {}
    for key, sides in out.items():
        s = pool_spec(ctx.catalog, key)
        fabric = ctx.catalog.fabrics[key.fabric]
        per_server = math.floor(
            s.nics_per_server * fabric.link_gbit_per_s / 8 * ctx.catalog.efficiency.serving.link_eff * 1000
        )
        need[key] = max(math.ceil(v / per_server) for v in sides.values())
    return need


def _unit_gpus(ctx: Context, o) -> int:
    """GPUs that fail together: a server, or a compute tray on rack-scale systems."""
    chassis = ctx.catalog.servers[o.pool.server]
    return chassis.gpus_per_tray or chassis.gpus_per_server


def _survives_a_server(options, counts, per, units, need) -> bool:
    """Lay the replicas out server by server (largest first, one kind per pool where two kinds
    could share a server), take each server down in turn, and check what is left."""
    pools: dict = defaultdict(list)
    for o, c, r, unit in zip(options, counts, per, units, strict=True):
        if c:
            pools[o.pool].append((o.gpus_per_replica, r, c, unit))
    lost = []
    for kinds in pools.values():
        if len(kinds) > 1 and any(g < unit for g, _, _, unit in kinds):
            return False
        for g, r, c, unit in sorted(kinds, reverse=True):
            servers: list[list[int]] = []  # [free GPUs, replicas] per server
            for _ in range(c):
                if not servers or servers[-1][0] < g:
                    servers.append([unit, 0])
                servers[-1][0] -= min(g, unit)
                servers[-1][1] += 1
            lost += [n * r for _, n in servers]
    cap = sum(c * r for c, r in zip(counts, per, strict=True))
    return cap - max(lost, default=0) >= need


def _price(ctx: Context, gpus: dict, rates: Rates, least_servers: dict | None = None) -> float | None:
    p, catalog = ctx.problem, ctx.catalog
    items: list[LineItem] = []
    racks = 0
    it_w = 0.0
    ports: dict[str, int] = defaultdict(int)
    members: dict[str, list] = defaultdict(list)  # (chassis, servers) per fabric: a rail fabric's rails
    for key, n_gpus in gpus.items():
        if n_gpus == 0:
            continue
        s = pool_spec(catalog, key)
        n = max(math.ceil(n_gpus / s.gpus_per_server), (least_servers or {}).get(key, 0))
        if n > pool_limit(p, catalog, key)[0]:
            return None
        fit = servers_per_rack(s, p.site)
        racks += 0 if fit is None else math.ceil(n / fit)  # desk-side and edge chassis need no rack
        it_w += n * s.power_w
        items.append(LineItem("server", "", "", n, s.server_price_usd, s.server_power_w, gpu=key.gpu))
        if s.nics_per_server:
            ports[key.fabric] += n * s.nics_per_server
            members[key.fabric].append((s.chassis, n))
            items.append(LineItem("network", "", "", n * s.nics_per_server, s.nic_price_usd, s.nic_power_w))
    for fid, n_ports in ports.items():
        f = catalog.fabrics[fid]
        net = network_for(f, n_ports, rail_ports(members[fid]))
        items.append(LineItem("network", "", "", net.switches, round(f.switch_price.usd), f.switch_power_w))
        items.append(LineItem("network", "", "", net.cables, round(f.cable_price.usd), 0.0))
        fit = max(1, per_rack(f.switch_rack_units, f.switch_power_w, p.site.rack_units, p.site.rack_power_kw))
        racks += math.ceil(net.switches / fit)
        it_w += net.switches * f.switch_power_w
    # front-end Ethernet for every racked server, and the jobs' storage (planner.frontend's rules)
    racked = sum(
        max(math.ceil(n / pool_spec(catalog, key).gpus_per_server), (least_servers or {}).get(key, 0))
        for key, n in gpus.items()
        if n and catalog.servers[key.server].needs_rack
    )
    store = storage_for(p, catalog) if racked else StoragePlan(0, 0, 0)
    fe = catalog.frontend
    switches, mgmt = frontend_switches(racked, store.ports, catalog)
    items.append(LineItem("network", "", "", switches, round(fe.switch_price.usd), fe.switch_power_w))
    items.append(LineItem("network", "", "", mgmt, round(fe.mgmt_switch_price.usd), fe.mgmt_switch_power_w))
    items.append(
        LineItem("network", "", "", racked * fe.ports_per_server + store.ports, round(fe.cable_price.usd), 0.0)
    )
    st = catalog.storage
    items.append(LineItem("storage", "", "", store.tb, round(st.price_usd_per_tb.usd), st.power_w_per_tb))
    it_w += switches * fe.switch_power_w + mgmt * fe.mgmt_switch_power_w + store.tb * st.power_w_per_tb
    items.append(LineItem("rack", "", "", racks, round(catalog.rack.price.usd), 0.0))
    m = summarize(items, rates)
    if p.finance.budget_usd is not None and m.capex_usd > p.finance.budget_usd:
        return None
    if p.site.power_kw is not None and it_w * p.finance.pue > p.site.power_kw * 1000 + 1e-6:
        return None
    if p.site.racks is not None and racks > p.site.racks:
        return None
    return m.tco_usd


@pytest.mark.parametrize("seed", range(40))
def test_cpsat_matches_brute_force(seed):
    rng = random.Random(seed)
    loaded = loads_problem(_random_problem(rng), f"random-{seed}.yaml")
    ctx = prepare(loaded)
    if not all(w.feasible for w in ctx.workloads):
        pytest.fail("generator made a workload with no options; adjust the generator")
    _trim(ctx, rng)
    expected = _brute_force(ctx)
    plan = plan_context(ctx)
    if expected is None:
        assert plan.status == "infeasible"
        return
    assert plan.status == "optimal", plan.diagnosis
    assert plan.verification == []
    # unit costs enter CP-SAT rounded to whole dollars: allow that much per item bought
    units = sum(r.quantity for r in plan.purchase)
    assert plan.tco_usd == pytest.approx(expected, abs=units + 1)


def test_upper_bound_reads_the_last_domain_value():
    """ortools 9.15's proto wrapper returns the first element for domain[-1]; guard the helper."""
    from ortools.sat.python import cp_model

    from planner.optimize.built import upper

    m = cp_model.CpModel()
    assert upper(m.new_int_var(3, 17, "x")) == 17
