"""aiconfigurator against the analytic model on aiconfigurator's silicon rows (issue 14, item 4).

For every aggregated row of ``shared/calibration/aic_silicon.csv`` this asks the planner's
analytic model and aiconfigurator (``planner.perf.aic_backend``) the same query, the one
``benchmarks/aic_check.py`` makes (``to_case``), and prints per model and GPU the median
predicted / measured ratio and exp(median |ln(predicted / measured)|) of TTFT and TPOT for
both, on the rows both answer. It also times aiconfigurator's estimates and measures what
installing it adds. Needs aiconfigurator: run it in a virtualenv that has it.

    python3 -m venv /tmp/aicvenv && /tmp/aicvenv/bin/pip install 'aiconfigurator==0.12.0' aiconfigurator-core \\
        && /tmp/aicvenv/bin/pip install -e .
    HF_HUB_OFFLINE=1 /tmp/aicvenv/bin/python benchmarks/aic_backend_check.py      # writes docs/aiconfigurator.md
"""

from __future__ import annotations

import argparse
import csv
import datetime
import math
import platform
import re
import shlex
import statistics
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import aic_check  # the sibling script: the same row -> query mapping

from planner.catalog import load_catalog
from planner.perf import aic_backend
from planner.perf.calibration.mapping import Skip, chassis_for
from planner.perf.inference import estimate_inference
from planner.perf.inference_types import InferenceEstimate, InferenceQuery
from planner.perf.links import link_for
from planner.perf.shapes import shape_of

DEFAULT_MARKDOWN = Path(__file__).resolve().parents[1] / "docs" / "aiconfigurator.md"
ROW_ENGINE = "row"  # --engine row: each row's own engine (what a planner cannot know)


@dataclass(frozen=True)
class Pair:
    model: str
    gpu: str
    engine: str  # the row's
    precision: str
    ttft: tuple[float, float]  # analytic / measured, aiconfigurator / measured
    tpot: tuple[float, float]


@dataclass
class Run:
    engine: str
    pairs: list[Pair] = field(default_factory=list)
    aic_only: int = 0  # rows aiconfigurator answers and the analytic model does not
    no_answer: dict[str, int] = field(default_factory=dict)  # rows aiconfigurator does not answer, by GPU
    seconds: list[float] = field(default_factory=list)  # per estimate, tables already loaded
    setup_seconds: float = 0.0  # first estimate per replica kind (tables loaded)
    sessions: int = 0


def _query(case: Any) -> InferenceQuery:
    """The query ``aic_check`` makes for a row's case (model, GPU, GPUs, precision, lengths, N)."""
    catalog = load_catalog()
    gpu = catalog.gpus[case.gpu]
    chassis = chassis_for(catalog, gpu, case.gpus)
    return InferenceQuery(
        model=shape_of(case.model, catalog),
        gpu=gpu,
        gpus=case.gpus,
        precision=case.precision,
        input_tokens=case.input_tokens,
        output_tokens=case.output_tokens,
        link=link_for(chassis, gpu, case.gpus),
        clients=case.concurrency,  # a closed loop of N clients, as the rows were measured
        attention_dp=case.attention_dp,
    )


def check(rows: Iterable[dict[str, str]], engine: str) -> Run:
    catalog = load_catalog()
    eff = catalog.efficiency
    run = Run(engine=engine)
    for row in rows:
        try:
            case, _ = aic_check.to_case(row, catalog)
        except Skip:
            continue
        query = _query(case)
        gen = eff.generations[query.gpu.generation]
        asked = row["backend"].strip() if engine == ROW_ENGINE else engine
        sessions = aic_backend._session.cache_info().currsize
        start = time.perf_counter()
        found = aic_backend.aic_estimate(query, gen, eff.serving, engine=asked)
        took = time.perf_counter() - start
        if aic_backend._session.cache_info().currsize > sessions:
            run.setup_seconds += took
            run.sessions += 1
        elif found is not None:
            run.seconds.append(took)
        analytic: InferenceEstimate = estimate_inference(query, gen, eff.serving)
        if found is None:
            run.no_answer[case.gpu] = run.no_answer.get(case.gpu, 0) + 1
            continue
        if not analytic.fits:
            run.aic_only += 1
            continue
        ttft, tpot = float(row["silicon_ttft_ms"]), float(row["silicon_tpot_ms"])
        run.pairs.append(
            Pair(
                model=case.model,
                gpu=case.gpu,
                engine=row["backend"].strip(),
                precision=row["precision"].strip(),
                ttft=(analytic.ttft_ms / ttft, found.ttft_ms / ttft),
                tpot=(analytic.tpot_ms / tpot, found.tpot_ms / tpot),
            )
        )
    return run


# --- summaries ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Line:
    model: str
    gpu: str
    rows: int
    ttft: tuple[float, float, float, float]  # analytic ratio, error; aiconfigurator ratio, error
    tpot: tuple[float, float, float, float]

    @property
    def aic_better(self) -> bool:
        """aiconfigurator's error below the analytic model's on both TTFT and TPOT."""
        return self.ttft[3] < self.ttft[1] and self.tpot[3] < self.tpot[1]


def _stats(ratios: Sequence[tuple[float, float]]) -> tuple[float, float, float, float]:
    out: list[float] = []
    for i in (0, 1):
        xs = [r[i] for r in ratios]
        out += [statistics.median(xs), math.exp(statistics.median(abs(math.log(x)) for x in xs))]
    return (out[0], out[1], out[2], out[3])


def _gpu_order(gpu: str) -> tuple[int, str]:
    ids = list(aic_backend.SYSTEMS)
    return (ids.index(gpu) if gpu in ids else len(ids), gpu)


def _line(model: str, gpu: str, pairs: Sequence[Pair]) -> Line:
    return Line(model, gpu, len(pairs), _stats([p.ttft for p in pairs]), _stats([p.tpot for p in pairs]))


def lines(run: Run) -> list[Line]:
    out = []
    for model in sorted({p.model for p in run.pairs}):
        mine = [p for p in run.pairs if p.model == model]
        for gpu in sorted({p.gpu for p in mine}, key=_gpu_order):
            out.append(_line(model, gpu, [p for p in mine if p.gpu == gpu]))
        out.append(_line(model, "all", mine))
    if run.pairs:
        out.append(_line("all", "all", run.pairs))
    return out


def lines_by_engine(run: Run) -> list[tuple[str, Line]]:
    out = []
    for engine in sorted({p.engine for p in run.pairs}):
        mine = [p for p in run.pairs if p.engine == engine]
        out.append((engine, _line("all", "all", mine)))
    return out


def preferred(run: Run) -> list[tuple[str, str]]:
    """(model, GPU) pairs where aiconfigurator is closer on both TTFT and TPOT."""
    return [(ln.model, ln.gpu) for ln in lines(run) if ln.gpu != "all" and ln.aic_better]


# --- cost of installing and calling -------------------------------------------------------


def _requires(name: str) -> set[str]:
    """The distribution and everything it requires (installed), by normalised name."""
    seen: set[str] = set()
    todo = [name]
    while todo:
        dist_name = re.sub(r"[-_.]+", "-", todo.pop()).lower()
        if dist_name in seen:
            continue
        try:
            dist = metadata.distribution(dist_name)
        except metadata.PackageNotFoundError:
            continue
        seen.add(dist_name)
        for req in dist.requires or []:
            if "extra ==" in req:
                continue
            found = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", req)
            if found:
                todo.append(found.group(0))
    return seen


def _size_bytes(dist_name: str) -> int:
    dist = metadata.distribution(dist_name)
    total = 0
    for f in dist.files or []:
        path = Path(str(dist.locate_file(f)))
        if path.is_file():
            total += path.stat().st_size
    return total


def install_size() -> tuple[float, float, list[str]]:
    """GB installed by aiconfigurator with its requirements, and the part the planner does not
    already need; the distributions in that part."""
    aic = _requires("aiconfigurator")
    extra = sorted(aic - _requires("planner"))
    return sum(map(_size_bytes, aic)) / 1e9, sum(map(_size_bytes, extra)) / 1e9, extra


# --- output -------------------------------------------------------------------------------

HEADER = (
    "model",
    "GPU",
    "rows",
    "TTFT ratio model",
    "TTFT ratio aic",
    "TTFT err model",
    "TTFT err aic",
    "TPOT ratio model",
    "TPOT ratio aic",
    "TPOT err model",
    "TPOT err aic",
)


def _cells(label: Sequence[str], ln: Line) -> list[str]:
    t, p = ln.ttft, ln.tpot
    return [
        *label,
        str(ln.rows),
        f"{t[0]:.2f}",
        f"{t[2]:.2f}",
        f"{t[1]:.2f}",
        f"{t[3]:.2f}",
        f"{p[0]:.2f}",
        f"{p[2]:.2f}",
        f"{p[1]:.2f}",
        f"{p[3]:.2f}",
    ]


def text_table(run: Run) -> str:
    rows = [_cells((ln.model, ln.gpu), ln) for ln in lines(run)]
    short = ("model", "GPU", "n", "TTFTm", "TTFTa", "errm", "erra", "TPOTm", "TPOTa", "errm", "erra")
    widths = [max(len(c) for c in col) for col in zip(short, *rows, strict=True)]
    return "\n".join(
        "  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True)))
        for cells in [list(short), *rows]
    )


def _md(cells: Sequence[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def _ms(xs: Sequence[float]) -> str:
    return f"{statistics.median(xs) * 1e3:.2f} ms" if xs else "n/a"


def markdown(runs: Sequence[Run], command: str, day: datetime.date, source: Path) -> str:
    main = runs[0]
    total, extra, extra_names = install_size()
    out = [
        "# aiconfigurator as a performance source",
        "",
        f"Generated by `{command}` on {day.isoformat()}; do not edit by hand.",
        f"aiconfigurator {metadata.version('aiconfigurator')} (aiconfigurator-core "
        f"{metadata.version('aiconfigurator-core')}), Python {platform.python_version()}; "
        f"source: `{source.name}`, its aggregated (`agg`) rows mapped to queries as `benchmarks/aic_check.py` does.",
        "",
        "Install and run it (an optional extra; the base install and the README commands do not need it):",
        "",
        "```bash",
        "pip install 'planner[aiconfigurator]'     # aiconfigurator==0.12.0 and aiconfigurator-core",
        "python3 -m venv /tmp/aicvenv && /tmp/aicvenv/bin/pip install 'aiconfigurator==0.12.0' aiconfigurator-core \\",
        "    && /tmp/aicvenv/bin/pip install -e .",
        f"HF_HUB_OFFLINE=1 /tmp/aicvenv/bin/python {command.split(' ', 1)[1]}",
        "```",
        "",
        f"- Installed size: {total:.2f} GB with everything it requires; {extra:.2f} GB beyond what the planner "
        f"already installs ({', '.join(extra_names)}).",
        f"- Time per estimate (`planner.perf.aic_backend.aic_estimate`, tables loaded, a given concurrency: "
        f"two aiconfigurator runs): median {_ms(main.seconds)} over {len(main.seconds)} estimates; loading one "
        f"replica kind's tables the first time: {main.setup_seconds / max(1, main.sessions):.2f} s on average "
        f"({main.sessions} kinds). Single CPU thread, {platform.machine()}.",
        "",
        "Ratio = predicted / measured, the median over the group's rows (> 1: slower than the silicon).",
        "err = exp(median |ln(predicted / measured)|): 1.10 is about 10 % off either way, 2.00 a factor 2.",
        "`model` is the planner's analytic model (`planner.perf.inference`), `aic` aiconfigurator through",
        "`planner.perf.aic_backend`, on the rows both answer. TTFT is measured in a closed loop of N clients",
        "(InferenceMAX protocol: 10 x N prompts, lengths 0.8 to 1.0 of ISL/OSL, vLLM",
        "max-num-batched-tokens 8192), so it includes queueing behind other prompts.",
        "",
        "Caution: both sides are partly in-sample. aiconfigurator ships these very rows",
        "(`systems/silicon_sample.csv`) and calibrated engine corrections on that corpus (vLLM's TTFT",
        "queueing factor, prefill dispatch overhead); the analytic model's TTFT fixed overhead and MoE",
        "prefill factors were fitted on these aggregated rows (issue 14, latency under load).",
        "",
        "Settings: aiconfigurator's database slot `current` of each engine (pinned; TensorRT-LLM",
        "1.3.0rc20, 1.0.0 on A100), its own `ctx_tokens` default (the prompt length; the benchmark's",
        "8192-token budget measured worse on TTFT, 1.72x against 1.45x overall), KV cache in FP8 where",
        "the planner computes in 8 bits or fewer, DeepSeek's FP8 as `fp8_block`, gpt-oss's MXFP4 experts",
        "as `w4a8_mxfp4_mxfp8` (FP4 query) or `w4a16_mxfp4`, experts spread over all the replica's GPUs",
        "(`moe_ep_size` = GPUs), and the planner's own memory model for fit.",
    ]
    for run in runs:
        title = "each row's own engine" if run.engine == ROW_ENGINE else f"engine `{run.engine}` for every row"
        out += [
            "",
            f"## aiconfigurator with {title}",
            "",
            _md(HEADER),
            _md(["---"] * 2 + ["---:"] * (len(HEADER) - 2)),
        ]
        for ln in lines(run):
            cells = _cells((ln.model, ln.gpu), ln)
            if ln.gpu == "all":
                cells = [f"**{c}**" for c in cells]
            out.append(_md(cells))
        out += ["", "By the rows' engine:", "", _md(("engine", *HEADER[2:])), _md(["---"] + ["---:"] * 9)]
        out += [_md(_cells((engine,), ln)) for engine, ln in lines_by_engine(run)]
        missing = ", ".join(f"{gpu} {n}" for gpu, n in sorted(run.no_answer.items()))
        out += [
            "",
            f"Rows aiconfigurator does not answer (model, GPU or precision it has no tables or config for, or an"
            f" error inside it): {missing or 'none'}; rows only it answers (the analytic model says the"
            f" replica does not fit): {run.aic_only}.",
        ]
    pref = preferred(main)
    out += [
        "",
        "## Where the planner prefers it",
        "",
        f"Where aiconfigurator (engine `{main.engine}`) has both the lower TTFT and the lower TPOT error above:",
        "",
        *[f"- {model} on {gpu}" for model, gpu in pref],
        "",
        "`planner.perf.aic_backend.MEASURED` holds the errors of the first table and `PREFERRED` the",
        "pairs above; `preferred_for(query)` reads it, and `planner.perf.aic_backend.estimate` answers",
        "with aiconfigurator there (when installed and it has an answer) and with the analytic model",
        "everywhere else, naming the source in `factors['source']`. aiconfigurator answers a given load",
        "(a closed loop of `clients`, a steady batch `concurrency`, or the largest steady batch meeting",
        "the targets with `steady_batch`); Poisson questions (`rate`, or sizing a rate for the targets)",
        "stay with the analytic model, which has the arrival-process queue aiconfigurator lacks.",
        "GPUs and models without measured rows here are never preferred: aiconfigurator's tables for them",
        "(L40S, RTX PRO 6000, A100-SXM, GB300, other models) may be good, but nothing here shows it.",
    ]
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None) -> list[Run]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", type=Path, default=aic_check.DEFAULT_CSV)
    parser.add_argument("--markdown", type=Path, default=DEFAULT_MARKDOWN)
    parser.add_argument("--no-markdown", action="store_true", help="print only")
    parser.add_argument(
        "--engine",
        action="append",
        help=f"aiconfigurator engine tables to ask (trtllm, vllm, sglang, or '{ROW_ENGINE}': each row's own); "
        f"repeatable; the first decides the preference (default: {aic_backend.ENGINE}, then {ROW_ENGINE})",
    )
    args = parser.parse_args(argv)
    if not aic_backend.available():
        parser.error(f"aiconfigurator {aic_backend.AIC_VERSION} is not installed in this Python ({sys.executable})")
    with args.csv.open(newline="", encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if r["mode"].strip() == "agg"]
    runs = []
    for engine in args.engine or [aic_backend.ENGINE, ROW_ENGINE]:
        run = check(rows, engine)
        runs.append(run)
        print(f"\naiconfigurator engine: {engine}  (m: analytic model, a: aiconfigurator; err = exp median |ln|)")
        print(text_table(run))
        print(f"median time per estimate {_ms(run.seconds)}; no answer: {run.no_answer}; only aic: {run.aic_only}")
    print("\npreferred:", preferred(runs[0]))
    if runs[0].engine == aic_backend.ENGINE and set(preferred(runs[0])) != aic_backend.PREFERRED:
        print(f"note: planner.perf.aic_backend.PREFERRED says {sorted(aic_backend.PREFERRED)}: update MEASURED")
    if not args.no_markdown:
        words = ["python", "benchmarks/aic_backend_check.py", *(argv if argv is not None else sys.argv[1:])]
        text = markdown(runs, shlex.join(words), datetime.date.today(), args.csv)
        args.markdown.write_text(text, encoding="utf-8")
        print(f"wrote {args.markdown}")
    return runs


if __name__ == "__main__":
    main()
