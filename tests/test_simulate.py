"""The iteration-level simulator (planner.simulate) and `planner simulate`.

- an M/D/1 queue (one sequence at a time, one-token answers, constant iteration time) against
  its closed-form mean sojourn time;
- the event-skipping replica against a naive one-iteration-at-a-time reference, exactly;
- admission limits (max_seqs, KV cache) queue requests; same seed, same numbers;
- the command on an example problem and on a plan JSON.
"""

from __future__ import annotations

import json
import math
from collections import deque
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from planner.catalog import Catalog
from planner.cli import app
from planner.perf.engine import Engine, EngineLimits
from planner.perf.inference import engine_for
from planner.perf.inference_types import InferenceQuery
from planner.perf.links import link_for
from planner.perf.shapes import shape_of
from planner.simulate.closed_loop import closed_loop
from planner.simulate.fleet import Kind, Outcome, replay
from planner.simulate.stats import Latencies
from planner.simulate.traffic import Traffic, poisson_times

ROOT = Path(__file__).resolve().parent.parent
FIXED_KEYS = {
    "name",
    "requests",
    "ttft_p50_ms",
    "ttft_p99_ms",
    "tpot_p50_ms",
    "tpot_p99_ms",
    "e2e_p99_ms",
    "slo_attainment",
    "analytic_ttft_p99_ms",
    "analytic_tpot_p99_ms",
}


class ConstantCost:
    """Every iteration takes ``d`` seconds, whatever runs in it."""

    def __init__(self, d: float) -> None:
        self.d = d

    def iteration_s(
        self,
        decode_seqs: int,
        context_tokens: float | np.ndarray,
        prefill_tokens: int = 0,
        prefill_pairs: float = 0.0,
        prefill_prompts: int = 1,
    ) -> float | np.ndarray:
        return self.d + 0.0 * context_tokens

    def chunk_pairs(self, done_tokens: int, chunk_tokens: int) -> float:
        return 0.0


class VaryingCost:
    """An iteration time that depends on everything it is given (and not linearly on the context)."""

    def iteration_s(
        self,
        decode_seqs: int,
        context_tokens: float | np.ndarray,
        prefill_tokens: int = 0,
        prefill_pairs: float = 0.0,
        prefill_prompts: int = 1,
    ) -> float | np.ndarray:
        per_seq = context_tokens / max(decode_seqs, 1)
        return (
            1e-3
            + 2e-4 * decode_seqs
            + 3e-6 * np.sqrt(context_tokens)
            + np.minimum(per_seq, 50.0) * 1e-6
            + 5e-5 * prefill_tokens
            + 1e-7 * prefill_pairs
            + 1e-5 * prefill_prompts
        )

    def chunk_pairs(self, done_tokens: int, chunk_tokens: int) -> float:
        end = done_tokens + chunk_tokens
        return (end * (end + 1) - done_tokens * (done_tokens + 1)) / 2


def _engine(cost: object, budget: int, max_seqs: int, kv: int) -> Engine:
    return Engine(cost=cost, limits=EngineLimits(token_budget=budget, max_seqs=max_seqs, kv_capacity_tokens=kv))  # type: ignore[arg-type]


def _one_replica(engine: Engine, times: np.ndarray, inputs: np.ndarray, outputs: np.ndarray) -> Outcome:
    traffic = Traffic(times, inputs.astype(np.int64), outputs.astype(np.int64), np.zeros(len(times), dtype=np.int64))
    return replay([Kind(engine, 1)], traffic, np.zeros(len(times), dtype=np.int64))


def naive(engine: Engine, times: list[float], inputs: list[int], outputs: list[int]) -> tuple[list[float], list[float]]:
    """The scheduler one iteration at a time, every sequence's counters kept: the reference."""
    cost, lim = engine.cost, engine.limits
    n = len(times)
    first, finish = [math.nan] * n, [math.nan] * n
    waiting: deque[int] = deque()
    running: list[dict[str, int]] = []  # admission order
    t, nxt, kv = 0.0, 0, 0
    while nxt < n or waiting or running:
        if not running and not waiting:
            t = max(t, times[nxt])
        while nxt < n and times[nxt] <= t:
            waiting.append(nxt)
            nxt += 1
        decoders = [s for s in running if s["done"] == inputs[s["id"]]]
        context = sum(inputs[s["id"]] + s["generated"] for s in decoders)
        room, tokens, pairs, prompts = lim.token_budget - len(decoders), 0, 0.0, 0
        completed = []
        for s in running:
            if s["done"] < inputs[s["id"]] and room > 0:
                chunk = min(room, inputs[s["id"]] - s["done"])
                pairs += cost.chunk_pairs(s["done"], chunk)
                s["done"] += chunk
                tokens, room, prompts = tokens + chunk, room - chunk, prompts + 1
                if s["done"] == inputs[s["id"]]:
                    completed.append(s)
        while waiting and room > 0:
            rid = waiting[0]
            need = inputs[rid] + outputs[rid]
            if len(running) >= lim.max_seqs or (running and kv + need > lim.kv_capacity_tokens):
                break
            waiting.popleft()
            kv += need
            chunk = min(room, inputs[rid])
            pairs += cost.chunk_pairs(0, chunk)
            tokens, room, prompts = tokens + chunk, room - chunk, prompts + 1
            s = {"id": rid, "done": chunk, "generated": 0}
            running.append(s)
            if chunk == inputs[rid]:
                completed.append(s)
        t = t + float(cost.iteration_s(len(decoders), float(context), tokens, pairs, max(1, prompts)))
        for s in decoders + completed:
            s["generated"] += 1
            if s in completed:
                first[s["id"]] = t
            if s["generated"] == outputs[s["id"]]:
                finish[s["id"]] = t
                kv -= inputs[s["id"]] + outputs[s["id"]]
                running.remove(s)
    return first, finish


def _random_case(seed: int, n: int, rate: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    times = poisson_times(rate, n, rng)
    times[5:9] = times[4]  # a burst: arrivals at one instant
    times[20] = times[19]
    inputs = rng.integers(1, 200, n)
    outputs = rng.integers(1, 60, n)
    outputs[::7] = 1  # one-token answers
    return times, inputs, outputs


@pytest.mark.parametrize("rho", [0.5, 0.8])
def test_md1_mean_sojourn_matches_the_closed_form(rho: float) -> None:
    d = 0.01
    rate = rho / d
    n = 60_000
    rng = np.random.default_rng(1)
    times = poisson_times(rate, n, rng)
    engine = _engine(ConstantCost(d), budget=1000, max_seqs=1, kv=10**6)
    out = _one_replica(engine, times, np.full(n, 10), np.ones(n, dtype=np.int64))
    ttft = out.first_s - out.send_s
    expected = d + rho * d / (2 * (1 - rho))
    assert np.all(out.finish_s == out.first_s)
    assert ttft.mean() == pytest.approx(expected, rel=0.03)
    assert ttft.min() == pytest.approx(d)


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_event_skipping_equals_the_naive_reference(seed: int) -> None:
    times, inputs, outputs = _random_case(seed, 400, rate=60.0)
    engine = _engine(VaryingCost(), budget=64, max_seqs=6, kv=900)
    fast = _one_replica(engine, times, inputs, outputs)
    first, finish = naive(engine, times.tolist(), inputs.tolist(), outputs.tolist())
    assert np.allclose(fast.first_s, first, rtol=0, atol=1e-9)
    assert np.allclose(fast.finish_s, finish, rtol=0, atol=1e-9)
    fast_lat = Latencies.of(fast.send_s, fast.first_s, fast.finish_s, outputs)
    ref_lat = Latencies.of(times, np.array(first), np.array(finish), outputs)
    assert np.allclose(fast_lat.tpot_s, ref_lat.tpot_s, rtol=0, atol=1e-9, equal_nan=True)


def _real_engine(catalog: Catalog) -> Engine:
    gpu, chassis = catalog.gpus["B200"], catalog.servers["hgx-b200-8gpu"]
    q = InferenceQuery(
        model=shape_of("llama-3.1-8b", catalog),
        gpu=gpu,
        gpus=1,
        precision="fp8",
        input_tokens=1000,
        output_tokens=200,
        link=link_for(chassis, gpu, 1),
    )
    eff = catalog.efficiency
    engine = engine_for(q, eff.generations[gpu.generation], eff.serving)
    assert engine is not None
    return engine


def test_event_skipping_equals_the_naive_reference_on_the_real_cost(catalog: Catalog) -> None:
    real = _real_engine(catalog)
    engine = Engine(cost=real.cost, limits=EngineLimits(token_budget=512, max_seqs=16, kv_capacity_tokens=20_000))
    rng = np.random.default_rng(9)
    n = 300
    times = poisson_times(20.0, n, rng)
    inputs, outputs = rng.integers(50, 1500, n), rng.integers(1, 300, n)
    fast = _one_replica(engine, times, inputs, outputs)
    first, finish = naive(engine, times.tolist(), inputs.tolist(), outputs.tolist())
    assert np.allclose(fast.first_s, first, rtol=0, atol=1e-9)
    assert np.allclose(fast.finish_s, finish, rtol=0, atol=1e-9)


def test_max_seqs_queues_requests() -> None:
    engine = _engine(ConstantCost(0.01), budget=1000, max_seqs=2, kv=10**6)
    n = 5
    out = _one_replica(engine, np.zeros(n), np.full(n, 10), np.full(n, 20))
    # two run at once: pairs start their prompts together, each pair after the previous finished
    assert out.first_s.tolist() == pytest.approx([0.01, 0.01, 0.21, 0.21, 0.41])
    assert out.finish_s.tolist() == pytest.approx([0.20, 0.20, 0.40, 0.40, 0.60])


def test_kv_cache_queues_requests() -> None:
    # room for one request (prompt 10 + output 20) at a time, though max_seqs allows 8
    engine = _engine(ConstantCost(0.01), budget=1000, max_seqs=8, kv=45)
    n = 3
    out = _one_replica(engine, np.zeros(n), np.full(n, 10), np.full(n, 20))
    assert out.first_s.tolist() == pytest.approx([0.01, 0.21, 0.41])
    assert np.all(out.first_s[1:] > out.finish_s[:-1])
    # with room for all three, they run together
    roomy = _one_replica(_engine(ConstantCost(0.01), 1000, 8, 90), np.zeros(n), np.full(n, 10), np.full(n, 20))
    assert roomy.first_s.tolist() == pytest.approx([0.01] * 3)


def test_chunked_prefill_spreads_a_long_prompt_over_iterations() -> None:
    engine = _engine(ConstantCost(0.01), budget=100, max_seqs=8, kv=10**6)
    out = _one_replica(engine, np.zeros(1), np.array([250]), np.array([3]))
    assert out.first_s[0] == pytest.approx(0.03)  # 100 + 100 + 50 tokens
    assert out.finish_s[0] == pytest.approx(0.05)


def test_same_seed_same_numbers(catalog: Catalog) -> None:
    engine = _real_engine(catalog)
    a = closed_loop(engine, clients=8, input_tokens=1000, output_tokens=200, waves=3, seed=4)
    b = closed_loop(engine, clients=8, input_tokens=1000, output_tokens=200, waves=3, seed=4)
    c = closed_loop(engine, clients=8, input_tokens=1000, output_tokens=200, waves=3, seed=5)
    assert np.array_equal(a.first_s, b.first_s) and np.array_equal(a.finish_s, b.finish_s)
    assert not np.array_equal(a.first_s, c.first_s)
    assert len(a.send_s) == 24 and np.all(a.send_s[:8] == 0) and np.all(a.finish_s > a.first_s)


def test_closed_loop_keeps_n_clients_in_flight() -> None:
    engine = _engine(ConstantCost(0.01), budget=10_000, max_seqs=64, kv=10**7)
    out = closed_loop(engine, clients=4, input_tokens=100, output_tokens=10, waves=5, seed=0)
    events = sorted([(t, 1) for t in out.send_s] + [(t, -1) for t in out.finish_s])
    in_flight, most = 0, 0
    for _, step in events:
        in_flight += step
        most = max(most, in_flight)
    assert most == 4 and len(out.send_s) == 20


runner = CliRunner()


def _simulate(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["simulate", *args])
    return result.exit_code, result.output


def test_simulate_an_example_problem(tmp_path: Path) -> None:
    out = tmp_path / "sim.json"
    code, text = _simulate(str(ROOT / "problems" / "serve-70b.yaml"), "--requests", "2000", "--json", str(out))
    report = json.loads(out.read_text())
    services = report["services"]
    assert [s["name"] for s in services] == ["chat-70b", "rag-70b"]
    for s in services:
        assert set(s) >= FIXED_KEYS
        assert s["requests"] == 2000 and 0 <= s["slo_attainment"] <= 1
        assert s["ttft_p50_ms"] <= s["ttft_p99_ms"]
    holds = all(s["ttft_p99_ms"] <= s["ttft_target_ms"] and s["tpot_p99_ms"] <= s["tpot_target_ms"] for s in services)
    assert code == (0 if holds else 1), text
    assert "chat-70b" in text


def test_simulate_a_plan_json(tmp_path: Path) -> None:
    problem = tmp_path / "p.yaml"
    problem.write_text(
        "name: small\n"
        "inference:\n"
        "  - name: chat\n"
        "    model: llama-3.1-8b\n"
        "    requests_per_s: 4\n"
        "    input_tokens: 500\n"
        "    output_tokens: 100\n"
        "    ttft_ms: 5000\n"
        "    tpot_ms: 200\n"
    )
    plan = tmp_path / "plan.json"
    assert runner.invoke(app, ["solve", str(problem), "--json", str(plan), "--quiet"]).exit_code == 0
    out = tmp_path / "sim.json"
    code, text = _simulate(str(plan), "--problem", str(problem), "--requests", "1500", "--json", str(out))
    assert code == 0, text
    first = json.loads(out.read_text())
    assert set(first["services"][0]) >= FIXED_KEYS
    # same seed, same numbers; the JSON is written whole (and rewritten the same)
    assert _simulate(str(plan), "--problem", str(problem), "--requests", "1500", "--json", str(out))[0] == 0
    assert json.loads(out.read_text()) == first

    # the same plan at 50 times the rate: the targets break, exit 1
    loaded = json.loads(plan.read_text())
    loaded["inference"][0]["required_rps"] = 200.0
    hot = tmp_path / "hot.json"
    hot.write_text(json.dumps(loaded))
    code, text = _simulate(str(hot), "--problem", str(problem), "--requests", "3000", "--json", str(out))
    assert code == 1, text
    assert json.loads(out.read_text())["services"][0]["slo_attainment"] < 0.5


def test_simulate_bad_input_exits_2(tmp_path: Path) -> None:
    code, text = _simulate(str(tmp_path / "missing.yaml"))
    assert code == 2
    plan = tmp_path / "plan.json"
    plan.write_text("{}")
    code, text = _simulate(str(plan))
    assert code == 2 and "--problem" in text
    code, text = _simulate(str(plan), "--problem", str(ROOT / "problems" / "serve-70b.yaml"))
    assert code == 2 and "not a plan" in text


def _two_kinds(
    seed: int, n: int, rate: float, largest: tuple[int, int], share: float
) -> tuple[Traffic, list[Kind], np.ndarray]:
    """Poisson traffic of random sizes (below ``largest`` (input, output)) over two replica
    kinds (3 and 2 replicas), ``share`` of it routed to the first."""
    from planner.simulate.fleet import route_kinds

    rng = np.random.default_rng(seed)
    times = poisson_times(rate, n, rng)
    inputs, outputs = rng.integers(1, largest[0], n), rng.integers(1, largest[1], n)
    traffic = Traffic(times, inputs, outputs, np.zeros(n, dtype=np.int64))
    kinds = [Kind(_engine(VaryingCost(), 64, 4, 700), 3), Kind(_engine(ConstantCost(0.004), 128, 8, 2000), 2)]
    return traffic, kinds, route_kinds(traffic, [[share, 1 - share]], rng)


def test_router_sends_each_request_to_the_replica_with_fewest_outstanding() -> None:
    """The event-driven router against a scan of every replica at every arrival."""
    from planner.simulate.replica import Replica, Requests

    traffic, kinds, kind_of = _two_kinds(11, 600, 150.0, (200, 40), 0.6)
    fast = replay(kinds, traffic, kind_of, router="least-outstanding")

    times = traffic.send_s
    requests = Requests(traffic.input_tokens.tolist(), traffic.output_tokens.tolist())
    pools = [[Replica(k.engine, requests) for _ in range(k.count)] for k in kinds]
    for rid, (t, kind) in enumerate(zip(times.tolist(), kind_of.tolist(), strict=True)):
        for r in pools[kind]:
            r.advance(t)
        counts = [r.outstanding(t) for r in pools[kind]]
        pools[kind][counts.index(min(counts))].add(rid, t)
    for pool in pools:
        for r in pool:
            r.advance(math.inf)
    assert np.array_equal(fast.first_s, np.array(requests.first))
    assert np.array_equal(fast.finish_s, np.array(requests.finish))
    assert 0.5 < (kind_of == 0).mean() < 0.7


def test_random_router_replays_replicas_apart_as_in_time_order() -> None:
    """Replicas replayed one after another, in one process or split over several, against the
    same draws sent in time order to replicas that all advance together."""
    from planner.simulate.replica import DecodeTimes, Replica, Requests

    traffic, kinds, kind_of = _two_kinds(5, 800, 200.0, (300, 60), 0.5)
    outs = [replay(kinds, traffic, kind_of, rng=np.random.default_rng(9), workers=w) for w in (1, 2)]

    times = traffic.send_s
    draw = np.random.default_rng(9).random(len(traffic))
    requests = Requests(traffic.input_tokens.tolist(), traffic.output_tokens.tolist())
    pools = [[Replica(k.engine, requests, DecodeTimes(k.engine)) for _ in range(k.count)] for k in kinds]
    for rid, (t, kind, u) in enumerate(zip(times.tolist(), kind_of.tolist(), draw.tolist(), strict=True)):
        r = pools[kind][min(int(u * len(pools[kind])), len(pools[kind]) - 1)]
        r.advance(t)
        r.add(rid, t)
    for pool in pools:
        for r in pool:
            r.advance(math.inf)
    for out in outs:
        assert np.array_equal(out.first_s, np.array(requests.first))
        assert np.array_equal(out.finish_s, np.array(requests.finish))
    assert not np.isnan(outs[1].finish_s).any()


def test_jobs_replayed_in_turn_share_tables_and_give_each_job_alone() -> None:
    """One process replaying jobs in turn prices decode stretches from the tables the jobs before
    built (``fleet.decode_times``); each job's times are those of the job replayed first, alone."""
    from planner.simulate import fleet

    traffic, kinds, kind_of = _two_kinds(3, 3000, 400.0, (300, 120), 0.5)
    jobs = fleet.random_replay_jobs(kinds, traffic, kind_of, 0.0, np.random.default_rng(4), parts=5)
    assert len(jobs) == 5
    fleet._TABLES.clear()
    in_turn = [fleet.replay_alone(job) for job in jobs]
    assert any(table.blocks for _, table in fleet._TABLES.values())  # later jobs read blocks
    for job, together in reversed(list(zip(jobs, in_turn, strict=True))):
        fleet._TABLES.clear()
        alone = fleet.replay_alone(job)
        for a, b in zip(alone, together, strict=True):
            assert np.array_equal(a, b)


def test_round_robin_router_takes_the_replicas_in_turn() -> None:
    engine = _engine(ConstantCost(0.01), budget=1000, max_seqs=1, kv=10**6)
    n = 8
    traffic = Traffic(np.zeros(n), np.full(n, 10), np.ones(n, dtype=np.int64), np.zeros(n, dtype=np.int64))
    for router in ("round-robin", "least-outstanding"):
        out = replay([Kind(engine, 4)], traffic, np.zeros(n, dtype=np.int64), router=router)
        assert out.first_s.tolist() == pytest.approx([0.01] * 4 + [0.02] * 4)


def test_simulate_replays_a_mix_csv_trace(tmp_path: Path) -> None:
    rows = [(100 + 7 * i % 300, 20 + 3 * i % 50) for i in range(40)] + [(3000 + i, 200) for i in range(10)]
    (tmp_path / "requests.csv").write_text("input_tokens,output_tokens\n" + "".join(f"{a},{b}\n" for a, b in rows))
    problem = tmp_path / "p.yaml"
    problem.write_text(
        "name: traced\n"
        "inference:\n"
        "  - name: chat\n"
        "    model: llama-3.1-8b\n"
        "    precisions: [fp8]\n"
        "    requests_per_s: 5\n"
        "    ttft_ms: 5000\n"
        "    tpot_ms: 200\n"
        "    mix: {csv: requests.csv, input_edges: [1024], output_edges: [128], slices: 2}\n"
    )
    out = tmp_path / "sim.json"
    code, text = _simulate(str(problem), "--requests", "1000", "--json", str(out), "--workers", "1")
    service = json.loads(out.read_text())["services"][0]
    assert code == (0 if service["holds"] else 1), text
    buckets = {b["bucket"]: b for b in service["buckets"]}
    assert set(buckets) == {"in1-1024_out1-128", "in1025-up_out129-up"}
    # the trace is replayed in order, from the start again: 4 short requests to 1 long one
    assert buckets["in1-1024_out1-128"]["requests"] == 800 and buckets["in1025-up_out129-up"]["requests"] == 200
