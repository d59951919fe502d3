"""The training schedule as a Gantt chart: bars where the jobs run, deadlines where they are,
jobs that share a pool in turn never drawn on top of each other; the PNG is a PNG; the CLI
shows the schedule and writes gantt.png."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.cli import app
from planner.report.gantt import axis, gantt_lines, gantt_png, write_gantt_png
from planner.schema.plan import InferenceRow, Plan, ReplicaRow, ServerRow, TrainingRow

ROOT = Path(__file__).resolve().parents[1]
STARTUP = ROOT / "problems" / "startup.yaml"
PNG = b"\x89PNG\r\n\x1a\n"


def _job(name: str, gpu: str, gpus: int, start: float, end: float, deadline: float, **kw: object) -> TrainingRow:
    server = kw.pop("server", f"srv-{gpu.lower()}")
    return TrainingRow(
        name=name,
        gpu=gpu,
        gpus=gpus,
        server=str(server),
        fabric="none",
        days=end - start,
        start_day=start,
        end_day=end,
        deadline_days=deadline,
        precision="bf16",
        method="full",
        mfu=0.4,
        tflops_per_gpu=400.0,
        **kw,  # type: ignore[arg-type]
    )


def _plan(jobs: list[TrainingRow]) -> Plan:
    servers = [
        ServerRow(
            server="srv-h100",
            gpu="H100",
            gpus_per_server=8,
            fabric="none",
            count=1,
            unit_price_usd=1.0,
            unit_power_w=1.0,
            racks=1,
        ),
        ServerRow(
            server="srv-l40s",
            gpu="L40S",
            gpus_per_server=4,
            fabric="none",
            count=1,
            unit_price_usd=1.0,
            unit_power_w=1.0,
            racks=1,
        ),
    ]
    return Plan(
        problem="hand-made",
        status="optimal",
        gap=0.0,
        servers=servers,
        training=jobs,
        assumptions={"horizon_years": 3},
    )


# Latest deadline 100 days: ticks every 20 days, so 0..100 on 50 columns, 2 days a column.
JOBS = [
    _job("first", "H100", 8, 0.0, 30.0, 40.0),
    _job("second", "H100", 8, 30.0, 55.0, 60.0),
    _job("other", "L40S", 4, 10.0, 90.0, 100.0),
    _job("burst", "H100", 8, 5.0, 20.0, 25.0, rented=True, rent_usd_per_gpu_hour=2.5),
]


def _grid(lines: list[str]) -> tuple[int, dict[str, str]]:
    """The column where day 0 is drawn (the ruler's first tick) and each job's row from there."""
    ruler = next(line for line in lines if line.lstrip().startswith("+-"))
    offset = ruler.index("+")
    rows: dict[str, str] = {}
    for line in lines:
        job = re.match(r"  [A-Za-z0-9] (\S+) ", line)  # "  A name  4 x GPU  day 0.0-9.0  ..###|"
        if job:
            rows[job.group(1)] = line[offset:]
    return offset, rows


def _cols(row: str, chars: str) -> list[int]:
    return [i for i, c in enumerate(row) if c in chars]


def test_axis_spans_the_latest_deadline_not_the_horizon():
    ax = axis(_plan(JOBS), width=50)
    assert ax.span_days == 100
    assert ax.ticks() == [0, 20, 40, 60, 80, 100]
    # jobs done in 3 weeks of a 3-year horizon: the axis is weeks long, rounded to a tick
    short = axis(_plan([_job("quick", "H100", 8, 0.0, 17.0, 21.0)]))
    assert short.span_days == 25


def test_bars_start_and_end_at_their_days_and_deadlines_are_marked():
    _, rows = _grid(gantt_lines(_plan(JOBS), width=50))
    # 2 days a column; a column belongs to a bar when its middle falls inside [start, end)
    assert _cols(rows["first"], "#") == list(range(0, 15))  # days 0-30
    assert _cols(rows["second"], "#") == list(range(15, 27))  # days 30-55: column 27 (day 55) is after the end
    assert _cols(rows["other"], "#") == list(range(5, 45))  # days 10-90
    assert _cols(rows["first"], "|") == [20]  # day 40
    assert _cols(rows["second"], "|") == [30]  # day 60
    assert _cols(rows["other"], "|") == [50]  # day 100: the right edge of the axis


def test_rented_jobs_are_drawn_and_labelled_as_rented():
    lines = gantt_lines(_plan(JOBS), width=50)
    _, rows = _grid(lines)
    assert _cols(rows["burst"], "=") == list(range(2, 10))  # days 5-20
    assert _cols(rows["burst"], "#") == []
    assert _cols(rows["burst"], "|") == [12]  # day 25
    label = next(line for line in lines if " burst " in line)
    assert "8 x H100 rented" in label
    assert any("H100 rented from a cloud" in line for line in lines)


def test_jobs_sharing_a_pool_in_turn_never_overlap():
    # the hand-over falls in the middle of a column on most widths
    for boundary in (30.0, 31.3, 33.33, 47.9):
        plan = _plan([_job("first", "H100", 8, 0.0, boundary, 50.0), _job("second", "H100", 8, boundary, 70.0, 100.0)])
        for width in range(37, 81):
            lines = gantt_lines(plan, width=width)
            _, rows = _grid(lines)
            a, b = set(_cols(rows["first"], "#")), set(_cols(rows["second"], "#"))
            assert a and b and not a & b, (boundary, width)
            assert max(a) < min(b)
            in_use = next(line for line in lines if line.strip().startswith("in use"))
            assert "+" not in in_use and "A" in in_use and "B" in in_use


def test_the_pool_row_shows_which_job_holds_the_gpus_and_jobs_at_once():
    lines = gantt_lines(_plan(JOBS), width=50)
    offset, _ = _grid(lines)
    pools = [line for line in lines if "pool on" in line]
    assert [p.split()[0] for p in pools] == ["H100", "L40S"]
    assert "8 GPUs bought" in pools[0] and "at most 8 at once" in pools[0]
    use = [line[offset:] for line in lines if line.strip().startswith("in use")]
    assert len(use) == 2  # one per owned pool; the rented job holds none of them
    h100 = use[0]
    assert h100[:15] == "A" * 15 and h100[15:27] == "B" * 12 and set(h100[27:]) == {"."}
    # two jobs at once on one pool are shown as such
    together = _plan([_job("x", "H100", 4, 0.0, 30.0, 40.0), _job("y", "H100", 4, 20.0, 40.0, 40.0)])
    row = next(line for line in gantt_lines(together, width=40) if line.strip().startswith("in use"))
    assert "+" in row and "at most 8 at once" in "\n".join(gantt_lines(together, width=40))


def test_a_job_shorter_than_a_column_is_still_drawn_and_a_late_one_is_flagged():
    plan = _plan(
        [
            _job("first", "H100", 8, 0.0, 60.0, 100.0),
            _job("second", "H100", 8, 60.0, 60.5, 100.0),
            _job("other", "L40S", 4, 0.0, 70.0, 50.0),  # past its deadline
        ]
    )
    _, rows = _grid(gantt_lines(plan, width=50))
    assert len(_cols(rows["second"], "#")) == 1
    assert _cols(rows["other"], "!") == [25]  # day 50, inside the bar
    assert _cols(rows["other"], "|") == []


def test_no_training_no_schedule():
    assert gantt_lines(_plan([])) == []


def test_png_is_a_png(tmp_path):
    png = gantt_png(_plan(JOBS))
    assert png.startswith(PNG) and len(png) > 1000
    path = tmp_path / "gantt.png"
    write_gantt_png(_plan(JOBS), path)
    assert path.read_bytes().startswith(PNG)
    assert [p.name for p in tmp_path.iterdir()] == ["gantt.png"]  # no temporary left behind


@pytest.fixture(scope="module")
def startup_run(tmp_path_factory):
    charts = tmp_path_factory.mktemp("charts")
    json_path = charts.parent / "startup-plan.json"
    run = CliRunner().invoke(app, ["solve", str(STARTUP), "--charts", str(charts), "--json", str(json_path)])
    assert run.exit_code == 0, run.output
    return run.output, charts, Plan.model_validate_json(json_path.read_text())


def test_solve_prints_the_schedule_with_every_job(startup_run):
    output, _, plan = startup_run
    assert plan.training
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Schedule of training jobs"))
    end = next(i for i, line in enumerate(lines) if i > start and "TCO breakdown" in line)
    section = lines[start:end]
    for job in plan.training:
        assert any(f" {job.name} " in line for line in section), job.name
    # each bar where the plan says the job runs, on the axis the section states
    ax = axis(plan)
    assert f"day 0 to {ax.span_days:g}" in section[0]
    _, rows = _grid(section)
    for job in plan.training:
        bar = _cols(rows[job.name], "#")
        scale = ax.width / ax.span_days
        if (job.end_day - job.start_day) * scale < 1:  # shorter than a column: where its middle falls
            assert bar == [int((job.start_day + job.end_day) / 2 * scale)], job.name
        else:
            assert abs(bar[0] - job.start_day * scale) <= 0.5 + 1e-9, job.name
            assert abs(bar[-1] + 1 - job.end_day * scale) <= 0.5 + 1e-9, job.name
        assert _cols(rows[job.name], "|") == [round(job.deadline_days * scale)], job.name  # whole days here


def test_solve_writes_gantt_png(startup_run):
    _, charts, _ = startup_run
    png = charts / "gantt.png"
    assert png.exists() and png.stat().st_size > 0
    assert png.read_bytes().startswith(PNG)


def test_a_service_on_a_jobs_fabric_pool_shows_as_holding_its_gpus():
    job = _job("train", "H100", 8, 0.0, 30.0, 40.0, server="srv-h100").model_copy(update={"fabric": "ib-ndr"})
    plan = _plan([job])
    plan.servers[0] = plan.servers[0].model_copy(update={"fabric": "ib-ndr", "count": 2})

    def replicas(fabric: str) -> ReplicaRow:
        return ReplicaRow(
            gpu="H100",
            server="srv-h100",
            gpus_per_replica=4,
            precision="fp8",
            count=2,
            rps_per_replica=1.0,
            ttft_ms=1.0,
            tpot_ms=1.0,
            batch=1,
            fabric=fabric,
        )

    def served(fabric: str) -> Plan:
        svc = InferenceRow(
            name="chat", model="m", required_rps=1.0, capacity_rps=2.0, spare_replicas=0, replicas=[replicas(fabric)]
        )
        return plan.model_copy(update={"inference": [svc]})

    title = next(line for line in gantt_lines(served("ib-ndr"), width=40) if "pool on" in line)
    assert "16 GPUs bought, services hold 8 all along" in title
    # the same replicas on the single-server pool of that chassis hold none of the job's pool
    elsewhere = next(line for line in gantt_lines(served("none"), width=40) if "pool on" in line)
    assert "services hold" not in elsewhere
