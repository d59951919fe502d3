"""Prefix caching and speculative decoding (issue 17), held to hand calculations.

Prefix cache: a hit skips prefilling the shared prefix (``2 x active params`` FLOPs per token
plus the causal attention pairs it would have had), so on a prefill-dominated service the
capacity grows as the FLOPs per request shrink. Speculation: at batch 1 a decode step reads
the weights, so a speculative step costs ``(W_target + k x W_draft) / bandwidth`` and yields
``E = (1 - a^(k+1)) / (1 - a)`` tokens.
"""

from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.catalog import Catalog, load_catalog
from planner.cli import app
from planner.io.problem_io import loads_problem
from planner.perf.inference import engine_for, estimate_inference
from planner.perf.inference_types import InferenceEstimate, InferenceQuery
from planner.perf.links import link_for
from planner.perf.shapes import ModelShape, inline_shape, shape_of
from planner.perf.speculation import PrefixCache, Speculation, expected_tokens, mtp_shape
from planner.pipeline import plan_problem
from planner.schema.model_ref import InlineModel
from planner.schema.plan import Plan
from planner.simulate.analytic import analytic_p99s
from planner.simulate.fleet import Kind, replay
from planner.simulate.stats import Latencies
from planner.simulate.traffic import Bucket, poisson_traffic, with_prefix_hits
from planner.verify import verify

# Llama-3.2-1B's shape (config.json): 1.24B parameters, 16 layers, hidden 2048, 8 KV heads of 64
DRAFT_1B = InlineModel(params_b=1.24, layers=16, hidden_size=2048, kv_heads=8, head_dim=64)


def _query(catalog: Catalog, model: ModelShape, tp: int = 1, **kw: object) -> InferenceQuery:
    gpu = catalog.gpu("H100-SXM")
    server = catalog.servers["hgx-hopper-8gpu"]
    link = link_for(server, gpu, tp)
    return InferenceQuery(model=model, gpu=gpu, gpus=tp, precision="bf16", link=link, **kw)  # type: ignore[arg-type]


def _est(catalog: Catalog, q: InferenceQuery) -> InferenceEstimate:
    eff = catalog.efficiency
    return estimate_inference(q, eff.generations[q.gpu.generation], eff.serving)


def _only_h100(extra: str = "") -> str:
    others = ", ".join(g for g in load_catalog().gpus if g != "H100-SXM")
    return f"catalog: {{exclude: [{others}]}}\n{extra}"


def _problem_text(service: str) -> str:
    """One service (YAML lines) on H100-SXM alone, for a year."""
    item = textwrap.indent(service, "    ").replace("    ", "  - ", 1)
    return "name: t\nhorizon_years: 1\n" + _only_h100() + "inference:\n" + item


def _solve(service: str) -> Plan:
    return plan_problem(loads_problem(_problem_text(service), "t.yaml"))


def _gpus(plan: Plan) -> int:
    return sum(r.count * r.gpus_per_replica for row in plan.inference for r in row.replicas)


# --- prefix caching ----------------------------------------------------------------------

# A prefill-dominated service: 8K-token prompts (6K of them a shared system prompt and earlier
# turns), 16 output tokens, loose targets: a replica's capacity is its GPU time per request.
N, S = 8192, 6144


def _prefill_flops(model: ModelShape, tokens: int, cached: int) -> float:
    """FLOPs to prefill ``tokens`` after ``cached`` ones: 2 x active params per token, plus
    4 x attention width per (query, key) pair and layer, causal (each attends to all before)."""
    pairs = model.layers * ((cached + tokens) ** 2 - cached**2) / 2
    return 2 * model.active_params_b * 1e9 * tokens + 4 * 32 * 128 * pairs


def _prefill_ratio(model: ModelShape, h: float) -> float:
    """Capacity with hit rate ``h`` over capacity without, were the prompt's FLOPs all there was."""
    miss = _prefill_flops(model, N, 0)
    return miss / ((1 - h) * miss + h * _prefill_flops(model, N - S, S))


def _prefix_estimate(catalog: Catalog, prefix: PrefixCache | None) -> InferenceEstimate:
    model = shape_of("llama-3.1-8b", catalog)
    return _est(
        catalog,
        _query(catalog, model, input_tokens=N, output_tokens=16, ttft_ms=30_000, tpot_ms=5_000, prefix=prefix),
    )


def test_hit_rate_zero_is_no_prefix_cache(catalog: Catalog) -> None:
    plain = _prefix_estimate(catalog, None)
    zero = _prefix_estimate(catalog, PrefixCache(S, 0.0))
    assert zero.factors.pop("prefix_hit_rate") == 0.0
    assert zero.factors.pop("prefix_shared_tokens") == 0 and zero.factors.pop("prefix_kv_gb") == 0.0
    assert zero == plain


@pytest.mark.parametrize("h", [0.3, 0.6, 0.9, 1.0])
def test_prefix_hits_grow_capacity_as_the_prefill_flops_shrink(catalog: Catalog, h: float) -> None:
    """Hand: llama-3.1-8b (8.03B active, 32 layers, attention width 4096), 8192-token prompts
    with 6144 shared. A miss prefills 2 x 8.03e9 x 8192 + 16384 x 32 x 8192^2/2 = 1.49e14 FLOPs;
    a hit 2 x 8.03e9 x 2048 + 16384 x 32 x (8192^2 - 6144^2)/2 = 4.06e13. At h = 0.9 the FLOPs per
    request fall 2.90x. The planner's capacity grows by that within 6%, never more (the decode
    steps and per-iteration fixed costs do not shrink; measured 2.80x)."""
    model = shape_of("llama-3.1-8b", catalog)
    assert _prefill_flops(model, N, 0) == pytest.approx(1.49e14, rel=0.01)
    assert _prefill_flops(model, N - S, S) == pytest.approx(4.06e13, rel=0.01)
    plain = _prefix_estimate(catalog, None)
    cached = _prefix_estimate(catalog, PrefixCache(S, h))
    ratio = cached.planning_requests_per_s / plain.planning_requests_per_s
    hand = _prefill_ratio(model, h)
    assert ratio == pytest.approx(hand, rel=0.06)
    assert ratio <= hand * 1.001
    assert cached.factors["prefix_hit_rate"] == h and cached.factors["prefix_shared_tokens"] == S
    # the shared copy is held once: 6144 tokens x 131,072 bytes (2 x 32 layers x 8 heads x 128 x 2)
    assert cached.factors["prefix_kv_gb"] == pytest.approx(6144 * 131_072 / 1e9)


def test_prefix_kv_is_held_once_and_hits_hold_only_their_own(catalog: Catalog) -> None:
    """KV capacity: one copy of the prefix comes off the spare memory; a hit's own cache holds
    the rest of its prompt and its output."""
    model = shape_of("llama-3.1-8b", catalog)
    eff = catalog.efficiency

    def engine(prefix: PrefixCache | None):  # type: ignore[no-untyped-def]
        q = _query(catalog, model, input_tokens=N, output_tokens=16, prefix=prefix)
        return engine_for(q, eff.generations["hopper"], eff.serving)

    plain, cached = engine(None), engine(PrefixCache(S, 0.5))
    assert plain is not None and cached is not None
    assert plain.limits.kv_capacity_tokens - cached.limits.kv_capacity_tokens == pytest.approx(S, abs=1)
    by_memory = _prefix_estimate(catalog, PrefixCache(S, 1.0)).max_batch_by_memory
    spare_tokens = cached.limits.kv_capacity_tokens  # after the shared copy
    assert by_memory == pytest.approx(spare_tokens / (N - S + 8), rel=0.01)


def test_prefix_cache_moves_the_gpu_count_as_predicted() -> None:
    """30 requests/s of the prefill-dominated service on H100s: replicas = ceil(30 / capacity).
    With h = 0.9 the hand-predicted capacity is 2.90x larger (within 6%)."""
    catalog = load_catalog()
    base = """\
        name: rag
        model: llama-3.1-8b
        precisions: [bf16]
        requests_per_s: 30
        input_tokens: 8192
        output_tokens: 16
        ttft_ms: 30000
        tpot_ms: 5000
        """
    cap = _prefix_estimate(catalog, None).planning_requests_per_s
    none = _solve(textwrap.dedent(base))
    zero = _solve(textwrap.dedent(base) + "prefix_cache: {shared_tokens: 6144, hit_rate: 0}\n")
    hits = _solve(textwrap.dedent(base) + "prefix_cache: {shared_tokens: 6144, hit_rate: 0.9}\n")
    assert zero.tco_usd == none.tco_usd and _gpus(zero) == _gpus(none)
    assert _gpus(none) == math.ceil(30 / cap)  # 9 replicas of one GPU
    predicted = 30 / (cap * _prefill_ratio(shape_of("llama-3.1-8b", catalog), 0.9))  # 3.04 replicas
    assert math.ceil(predicted * 0.94) <= _gpus(hits) <= math.ceil(predicted * 1.06)
    assert hits.tco_usd < none.tco_usd


# --- speculative decoding ----------------------------------------------------------------


def _spec_estimate(catalog: Catalog, spec: Speculation | None, tp: int = 1, **kw: object) -> InferenceEstimate:
    model = shape_of("llama-3.1-8b", catalog)
    return _est(catalog, _query(catalog, model, tp, input_tokens=128, output_tokens=512, speculation=spec, **kw))


def test_expected_tokens_per_step() -> None:
    assert expected_tokens(0.8, 4) == pytest.approx((1 - 0.8**5) / 0.2) == pytest.approx(3.3616)
    assert expected_tokens(0.5, 1) == 1.5
    assert expected_tokens(1e-9, 4) == pytest.approx(1.0)


@pytest.mark.parametrize("a", [0.6, 0.8, 0.9])
def test_speculation_divides_the_bandwidth_bound_step_by_e(catalog: Catalog, a: float) -> None:
    """Hand, at batch 1 (a light Poisson load): a step reads the target's weights once
    (8.03e9 x 2 bytes) and the draft's k = 4 times (1.24e9 x 2 bytes), each with its KV of the
    mean context (128 + 256 tokens), over 3,350 GB/s x bandwidth_eff, plus the fixed step
    overhead; TPOT = step / E. Without speculation the step reads the target's alone."""
    draft = inline_shape(DRAFT_1B)
    gen, serving = catalog.efficiency.generations["hopper"], catalog.efficiency.serving
    bw = 3350e9 * gen.bandwidth_eff
    ctx = 128 + 512 / 2
    target = 8.03e9 * 2 + ctx * 2 * 32 * 8 * 128 * 2
    pass_d = draft.params_b * 1e9 * 2 + ctx * 2 * draft.layers * draft.kv_heads * draft.head_dim * 2
    overhead = serving.step_overhead_ms * 1e-3
    e = expected_tokens(a, 4)
    plain = _spec_estimate(catalog, None, rate=0.01)
    spec = _spec_estimate(catalog, Speculation(draft, 4, a), rate=0.01)
    assert plain.tpot_ms == pytest.approx(1e3 * (target / bw + overhead), rel=0.03)
    assert spec.tpot_ms == pytest.approx(1e3 * ((target + 4 * pass_d) / bw + overhead) / e, rel=0.03)
    assert spec.factors["speculation_tokens_per_step"] == pytest.approx(e)
    assert spec.weights_gb == pytest.approx(plain.weights_gb + 1.24 * 2)


def test_low_acceptance_costs_more_than_no_speculation(catalog: Catalog) -> None:
    draft = inline_shape(DRAFT_1B)
    plain = _spec_estimate(catalog, None, rate=0.01)
    bad = _spec_estimate(catalog, Speculation(draft, 4, 0.01), rate=0.01)
    assert bad.tpot_ms > 1.1 * plain.tpot_ms  # four draft passes and a 5-token verify for ~1 token


SPEC_SERVICE = """\
    name: chat
    model: llama-3.1-8b
    precisions: [bf16]
    requests_per_s: 400
    input_tokens: 128
    output_tokens: 512
    ttft_ms: 2000
    tpot_ms: 9
    disaggregation: never
    """


def _spec_service(extra: str = "") -> str:
    return textwrap.dedent(SPEC_SERVICE) + extra


def test_speculation_is_chosen_when_it_pays_and_moves_the_gpu_count_as_the_estimates_say() -> None:
    """A TPOT-bound service (9 ms p99, where a plain H100 step at batch 1 is 6.4 ms): without
    speculation one GPU holds about 20 sequences (4.7 requests/s); with a draft at a = 0.8
    (E = 3.36) a token costs ~2.6 ms at batch 1 and the batch grows about five-fold. For 400
    requests/s the servers (8 GPUs) are what the best replica size needs: for each TP degree
    ``tp x ceil(400 / capacity)`` GPUs, by the estimates."""
    catalog = load_catalog()
    draft = inline_shape(DRAFT_1B)
    targets = {"ttft_ms": 2000.0, "tpot_ms": 9.0}

    def servers(spec: Speculation | None) -> int:
        caps = {tp: _spec_estimate(catalog, spec, tp, **targets).planning_requests_per_s for tp in (1, 2, 4, 8)}
        return math.ceil(min(tp * math.ceil(400 / cap) for tp, cap in caps.items() if cap > 0) / 8)

    plain_cap = _spec_estimate(catalog, None, **targets).planning_requests_per_s
    spec_cap = _spec_estimate(catalog, Speculation(draft, 4, 0.8), **targets).planning_requests_per_s
    assert spec_cap > 4 * plain_cap > 0
    text = _spec_service(
        "speculative: {draft_model: {params_b: 1.24, layers: 16, hidden_size: 2048, kv_heads: 8, head_dim: 64}, "
        "acceptance_rate: 0.8}\n"
    )
    none, spec = _solve(_spec_service()), _solve(text)
    assert sum(s.count for s in none.servers) == servers(None)
    assert sum(s.count for s in spec.servers) == servers(Speculation(draft, 4, 0.8)) < servers(None)
    (row,) = spec.inference
    assert all(r.speculation_tokens_per_step == pytest.approx(3.3616) for r in row.replicas)
    assert spec.tco_usd < none.tco_usd
    assert not verify(loads_problem(_problem_text(text), "t.yaml").problem, catalog, spec)


def test_speculation_that_does_not_pay_is_not_used() -> None:
    """Allowing speculation never makes a plan worse: at a = 0.01 the planner keeps plain replicas."""
    none = _solve(_spec_service())
    bad = _solve(_spec_service("speculative: {draft_model: llama-3.1-8b, acceptance_rate: 0.01}\n"))
    assert bad.tco_usd == none.tco_usd and _gpus(bad) == _gpus(none)
    assert all(r.speculation_tokens_per_step is None for row in bad.inference for r in row.replicas)


def test_mtp_is_the_models_own_one_layer_module(catalog: Catalog) -> None:
    """DeepSeek-V3's MTP module, 11.61B: one MoE layer's routed experts (653.909B / 58 layers =
    11.27B, 8 of 256 per token) and 0.34B dense: 0.69B active; one layer of MLA cache."""
    v3 = shape_of("deepseek-v3", catalog)
    mtp = mtp_shape(v3, 11.61)
    assert mtp.layers == 1 and mtp.params_b == 11.61
    routed = 653.909 / 58
    assert mtp.active_params_b == pytest.approx(11.61 - routed + routed * 8 / 256, rel=1e-6)
    assert mtp.active_params_b == pytest.approx(0.69, abs=0.01)
    assert mtp.kv_bytes_per_token(1) == v3.kv_bytes_per_token(1) / 61


# --- the simulator agrees with the analytic model ---------------------------------------


def test_simulator_agrees_with_the_analytic_model_with_prefix_hits_and_speculation(catalog: Catalog) -> None:
    import numpy as np

    model = shape_of("llama-3.1-8b", catalog)
    q = _query(
        catalog,
        model,
        input_tokens=2048,
        output_tokens=256,
        prefix=PrefixCache(1536, 0.7),
        speculation=Speculation(inline_shape(DRAFT_1B), 4, 0.8),
    )
    eff = catalog.efficiency
    engine = engine_for(q, eff.generations["hopper"], eff.serving)
    assert engine is not None
    buckets = [Bucket("all", 2048, 256, 1.0)]
    rate = 6.0
    (ttft, tpot), _ = analytic_p99s([Kind(engine, 1)], buckets, [[1.0]], rate)
    rng = np.random.default_rng(3)
    traffic = with_prefix_hits(poisson_traffic(rate, 20_000, rng, buckets), 1536, 0.7, rng)
    assert traffic.cached is not None and abs(float((traffic.cached > 0).mean()) - 0.7) < 0.02
    out = replay([Kind(engine, 1)], traffic, np.zeros(len(traffic), dtype=np.int64), 0.0, "random", rng)
    lat = Latencies.of(out.send_s, out.first_s, out.finish_s, traffic.output_tokens).summary(None, None)
    assert lat["ttft_p99_ms"] / ttft == pytest.approx(1.0, abs=0.15)
    assert lat["tpot_p99_ms"] / tpot == pytest.approx(1.0, abs=0.15)


# --- bad input ---------------------------------------------------------------------------

STARTUP = Path(__file__).resolve().parents[1] / "problems" / "startup.yaml"


@pytest.mark.parametrize(
    ("key", "says"),
    [
        ("speculative: {draft_model: llama-3.1-8bb, acceptance_rate: 0.7}", "unknown draft model 'llama-3.1-8bb'"),
        ("speculative: {mtp: true, acceptance_rate: 0.7}", "'llama-3.1-70b' has no multi-token-prediction heads"),
        ("speculative: {acceptance_rate: 0.7}", "exactly one of draft_model or mtp"),
        ("speculative: {draft_model: llama-3.1-8b, acceptance_rate: 1.0}", "acceptance_rate"),
        ("prefix_cache: {shared_tokens: 1024, hit_rate: 0.5}", "prefix_cache.shared_tokens (1024) must be less"),
        ("prefix_cache: {shared_tokens: 10, hit_rate: 1.5}", "hit_rate"),
    ],
)
def test_bad_serving_options_are_input_errors(tmp_path: Path, key: str, says: str) -> None:
    text = STARTUP.read_text(encoding="utf-8")
    assert text.count("    spare_replicas: 1\n") == 1
    path = tmp_path / "p.yaml"
    path.write_text(text.replace("    spare_replicas: 1\n", f"    spare_replicas: 1\n    {key}\n"), encoding="utf-8")
    run = CliRunner().invoke(app, ["validate", str(path)])
    assert run.exit_code == 2, run.output
    assert "Traceback" not in run.output and says in run.output


def test_estimate_command_takes_the_serving_options() -> None:
    args = ["estimate", "inference", "--model", "llama-3.1-8b", "--gpu", "H100-SXM", "--input-tokens", "2048"]
    run = CliRunner().invoke(
        app,
        [
            *args,
            "--rate",
            "1",
            "--prefix-shared-tokens",
            "1024",
            "--prefix-hit-rate",
            "0.5",
            "--draft-model",
            "llama-3.1-8b",
            "--acceptance-rate",
            "0.7",
            "--json",
        ],
    )
    assert run.exit_code == 0, run.output
    factors = json.loads(run.output)["factors"]
    assert factors["prefix_hit_rate"] == 0.5 and factors["speculation_tokens"] == 4
    bad = CliRunner().invoke(app, [*args, "--mtp", "--acceptance-rate", "0.7"])
    assert bad.exit_code == 2 and "multi-token-prediction" in bad.output
