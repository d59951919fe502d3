"""`planner calibrate`: the performance model run against published measurements.

Each row of a measurement table (by default the bundled ``calibration/measured.csv``)
is mapped to the query the planner would make for that setup — catalog GPU,
model shape, precision, lengths, batch, tensor-parallel degree — and answered by
the same functions ``planner estimate`` uses (``estimate_inference``,
``estimate_training`` with the catalog's efficiency factors). The report gives
predicted / measured per row and, per family, per GPU generation and precision
and per scenario: count, median ratio, median |ratio - 1| and the worst ratio.

Nothing here changes a factor: the harness only measures how far the catalog's
current factors are from the published figures. A row the model cannot express
is kept with an explicit ``skipped`` reason, never dropped.

The flow, one module per step:

- ``measurements``: read the table (``load_measurements``, ``parse_measurements``);
- ``mapping``: a row in the planner's terms (catalog GPU, shape, precision, lengths, deployment),
  or ``Skip`` with the reason; ``assumptions``: the figures assumed where a row is silent;
- ``predict_inference``, ``predict_training``: the model's value for one row;
  ``predict``: every row (``evaluate_row``, ``run_calibration``) into a ``Report``;
- ``summary``: median and worst ratios per group;
- ``render``: JSON, Markdown and terminal tables.
"""

from __future__ import annotations

from planner.perf.calibration.assumptions import (
    ASSUMED_TRAINING_GPUS,
    DEFAULT_SEQ_LEN,
    GPUS_PER_SERVER,
    MLPERF_SERVER_TPOT_MS,
    MLPERF_SERVER_TTFT_MS,
    OPENORCA_INPUT_TOKENS,
    OPENORCA_OUTPUT_TOKENS,
    assumptions,
)
from planner.perf.calibration.mapping import (
    GPU_ALIASES,
    MODEL_ALIASES,
    Deployment,
    Skip,
    catalog_gpu,
    chassis_for,
    inference_precision,
    lengths,
    mean_outputs_by_source,
    model_shape,
    parse_deployment,
    scenario_of,
    training_precision,
)
from planner.perf.calibration.measurements import (
    COLUMNS,
    Measurement,
    bundled_csv_text,
    load_measurements,
    parse_measurements,
)
from planner.perf.calibration.predict import FAMILIES, Report, RowResult, evaluate_row, run_calibration
from planner.perf.calibration.predict_inference import predict_inference
from planner.perf.calibration.predict_training import predict_training
from planner.perf.calibration.render import (
    ROW_HEADER,
    SUMMARY_HEADER,
    print_report,
    report_json,
    report_markdown,
    row_cells,
    summary_cells,
)
from planner.perf.calibration.summary import (
    Summary,
    family_summaries,
    generation_summaries,
    scenario_summaries,
    skip_counts,
    summaries_by,
    summarize,
    worst_rows,
)

__all__ = [
    "ASSUMED_TRAINING_GPUS",
    "COLUMNS",
    "DEFAULT_SEQ_LEN",
    "FAMILIES",
    "GPUS_PER_SERVER",
    "GPU_ALIASES",
    "MLPERF_SERVER_TPOT_MS",
    "MLPERF_SERVER_TTFT_MS",
    "MODEL_ALIASES",
    "OPENORCA_INPUT_TOKENS",
    "OPENORCA_OUTPUT_TOKENS",
    "ROW_HEADER",
    "SUMMARY_HEADER",
    "Deployment",
    "Measurement",
    "Report",
    "RowResult",
    "Skip",
    "Summary",
    "assumptions",
    "bundled_csv_text",
    "catalog_gpu",
    "chassis_for",
    "evaluate_row",
    "family_summaries",
    "generation_summaries",
    "inference_precision",
    "lengths",
    "load_measurements",
    "mean_outputs_by_source",
    "model_shape",
    "parse_deployment",
    "parse_measurements",
    "predict_inference",
    "predict_training",
    "print_report",
    "report_json",
    "report_markdown",
    "row_cells",
    "run_calibration",
    "scenario_of",
    "scenario_summaries",
    "skip_counts",
    "summaries_by",
    "summarize",
    "summary_cells",
    "training_precision",
    "worst_rows",
]
