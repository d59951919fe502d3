"""Latency under load (issue 14): the iteration cost and the closed-loop / Poisson models."""

from __future__ import annotations

import math

import numpy as np
import pytest

from planner.catalog import load_catalog
from planner.perf.engine import Engine, EngineLimits
from planner.perf.inference import engine_for, estimate_inference
from planner.perf.inference_types import InferenceQuery
from planner.perf.links import link_for
from planner.perf.load import Load
from planner.perf.queueing import mg1_wait_mean, mg1_wait_quantile
from planner.perf.replica import Replica
from planner.perf.shapes import shape_of


def _query(model: str = "llama-3.1-70b", gpu: str = "H200-SXM", gpus: int = 8, **kw: object) -> InferenceQuery:
    catalog = load_catalog()
    g = catalog.gpus[gpu]
    chassis = next(s for s in catalog.servers.values() if g.id in s.gpus and s.gpus_per_server >= gpus)
    base: dict[str, object] = {"input_tokens": 1024, "output_tokens": 1024, "precision": "fp8"}
    base.update(kw)
    return InferenceQuery(
        model=shape_of(model, catalog),
        gpu=g,
        gpus=gpus,
        link=link_for(chassis, g, gpus),
        **base,  # type: ignore[arg-type]
    )


def _engine(q: InferenceQuery) -> Engine:
    eff = load_catalog().efficiency
    e = engine_for(q, eff.generations[q.gpu.generation], eff.serving)
    assert e is not None
    return e


def test_a_decode_only_iteration_is_the_decode_step() -> None:
    """The engine's iteration and the steady-batch model price a decode step alike."""
    q = _query()
    eff = load_catalog().efficiency
    r = Replica(q, eff.generations[q.gpu.generation], eff.serving)
    cost = _engine(q).cost
    for batch in (1, 16, 128):
        assert cost.iteration_s(batch, batch * r.ctx_avg) == pytest.approx(r.step_s(batch)[0], rel=1e-9)


def test_iterations_evaluate_as_arrays() -> None:
    cost = _engine(_query()).cost
    contexts = np.array([1000.0, 5000.0, 9000.0]) * 8
    many = cost.iteration_s(8, contexts)
    one_by_one = [cost.iteration_s(8, float(c)) for c in contexts]
    assert np.allclose(many, one_by_one) and many[0] < many[2]


def test_chunk_pairs_add_up_to_the_whole_prompt() -> None:
    cost = _engine(_query()).cost
    model = _query().model
    assert cost.chunk_pairs(0, 3000) + cost.chunk_pairs(3000, 5192) == pytest.approx(model.causal_pairs(8192))


def test_md1_mean_wait_and_tail() -> None:
    # Pollaczek-Khinchine for deterministic service: W = rho D / (2 (1 - rho))
    assert mg1_wait_mean(0.5, [(1.0, 1.0)]) == pytest.approx(0.5)
    assert mg1_wait_mean(0.8, [(1.0, 1.0)]) == pytest.approx(2.0)
    # Cramer-Lundberg: P(W > t) = C exp(-theta t), theta > 0 solving rate (e^(theta D) - 1) = theta,
    # C = (1 - rho) / (rate D e^(theta D) - 1); theta found here by Newton's method on its own
    rate, d = 0.8, 1.0
    theta = 1.0
    for _ in range(50):
        f = rate * math.expm1(theta * d) - theta
        theta -= f / (rate * d * math.exp(theta * d) - 1)
    c = min(rate * d, (1 - rate * d) / (rate * d * math.exp(theta * d) - 1))
    t99 = mg1_wait_quantile(rate, [(1.0, d)], 0.99)
    assert c * math.exp(-theta * t99) == pytest.approx(0.01, rel=1e-6)
    assert mg1_wait_quantile(0.005, [(1.0, 1.0)], 0.99) == 0.0  # busy less than 1% of the time: no wait at p99


def test_one_client_waits_for_nothing() -> None:
    """A closed loop of one client: every TTFT is one prompt's own prefill plus the fixed overhead."""
    q = _query()
    load = Load(_engine(q), 1024, 1024)
    lat = load.closed_loop(1, waves=10, low=1.0)
    alone = load.prompt(0).latency_s
    assert lat.ttft_s == pytest.approx(alone, rel=0.05)


def test_first_wave_by_hand() -> None:
    """Four prompts of exactly one token budget arrive together: the k-th gets its first
    token at the end of the k-th iteration (decode of the earlier ones rides along)."""
    q = _query(input_tokens=8192)
    e = _engine(q)
    load = Load(Engine(e.cost, EngineLimits(8192, 64, 10**9), e.ttft_overhead_s), 8192, 16)
    wave = load._first_wave(4, tpot_s=0.01)
    ends, t = [], 0.0
    for k in range(4):
        # decoders take their budget token first, so prompt k spills into the next iteration
        t += float(e.cost.iteration_s(k, k * 8192.0, 8192 - k, e.cost.chunk_pairs(0, 8192 - k)))
        ends.append(t)
    assert wave.ttfts_s[0] == pytest.approx(ends[0] + e.ttft_overhead_s)
    assert wave.ttfts_s[-1] > wave.ttfts_s[0] * 3


def test_more_load_never_lowers_latency() -> None:
    load = Load(_engine(_query()), 1500, 350)
    top = load.saturation_rate()
    last = None
    for share in (0.05, 0.3, 0.6, 0.8):
        lat = load.poisson(share * top)
        assert lat.stable
        if last is not None:
            assert lat.ttft_p99_s >= last.ttft_p99_s and lat.tpot_s >= last.tpot_s
            assert lat.batch > last.batch
        last = lat
    assert lat.ttft_p99_s > lat.ttft_s  # a tail above the mean


def test_max_rate_meets_the_targets_and_tighter_targets_cost_rate() -> None:
    load = Load(_engine(_query()), 1500, 350)
    loose = load.max_rate(1.0, 0.040, 0.85)
    tight = load.max_rate(0.3, 0.030, 0.85)
    assert 0 < tight < loose <= 0.85 * load.saturation_rate() + 1e-9
    at = load.poisson(tight)
    assert at.ttft_p99_s <= 0.3 + 1e-6 and at.tpot_p99_s <= 0.030 + 1e-6


def test_estimate_modes() -> None:
    eff = load_catalog().efficiency
    gen = eff.generations["hopper"]
    planned = estimate_inference(_query(ttft_ms=500, tpot_ms=30), gen, eff.serving)
    assert planned.fits and planned.tpot_p99_ms <= 30 + 1e-6 and planned.ttft_p99_ms <= 500 + 1e-6
    at_rate = estimate_inference(_query(rate=planned.planning_requests_per_s), gen, eff.serving)
    assert at_rate.ttft_p99_ms == pytest.approx(planned.ttft_p99_ms, rel=1e-9)
    too_fast = estimate_inference(_query(rate=planned.requests_per_s * 2), gen, eff.serving)
    assert not too_fast.fits and "above what one replica serves" in too_fast.reason


def test_closed_loop_against_a_published_row() -> None:
    """InferenceMAX, Llama-3.1-70B FP8 on 8 x H200 (vLLM), 1024/1024 at 64 clients: mean TTFT
    194.9 ms, TPOT 12.73 ms (shared/calibration/aic_silicon.csv). Within 30% / 10%."""
    eff = load_catalog().efficiency
    est = estimate_inference(_query(clients=64), eff.generations["hopper"], eff.serving)
    assert est.ttft_ms == pytest.approx(194.9, rel=0.30)
    assert est.tpot_ms == pytest.approx(12.73, rel=0.10)


@pytest.mark.parametrize("share_of_ceiling", [1e-6, 1e-3, 0.05, 0.5])
def test_a_steady_state_stops_only_where_its_next_iteration_would_repeat(
    monkeypatch: pytest.MonkeyPatch, share_of_ceiling: float
) -> None:
    """Below one decoding sequence the batch stays at 1 and the batch test never passes: the
    fixed point stops when an iteration's inputs (batch, its prompts' costs) repeat the one
    before to the last bit, so its answer is the 60th iteration's, in a few iterations."""
    import planner.perf.load_mix as load_mix

    load = Load(_engine(_query()), 1024, 256)
    inputs: list[tuple[float, object]] = []
    real = load_mix._sharing

    def spy(engine, cls, rate, batch, base_s, prompts):  # type: ignore[no-untyped-def]
        inputs.append((batch, prompts))
        return real(engine, cls, rate, batch, base_s, prompts)

    monkeypatch.setattr(load_mix, "_sharing", spy)
    state = load.state(share_of_ceiling * load.saturation_rate())
    assert state is not None
    assert len(inputs) < 60
    if share_of_ceiling <= 1e-3:  # a light load: one sequence, and the iteration repeats
        assert state.batch == 1.0
        assert len(inputs) <= 3
        assert inputs[-1] == inputs[-2]
