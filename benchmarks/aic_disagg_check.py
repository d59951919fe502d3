"""The disaggregated model against aiconfigurator's disagg silicon rows (issue 17).

A thin command line over ``planner.perf.calibration.aic_disagg`` (row mapping, the closed loop
of N clients over ``planner.perf.disagg``, summaries and the report):

    python benchmarks/aic_disagg_check.py                  # prints, writes docs/aic_disagg_check.md
    python benchmarks/aic_disagg_check.py --csv PATH --markdown /tmp/out.md
    python benchmarks/aic_disagg_check.py --json /tmp/out.json --no-markdown
"""

from __future__ import annotations

import argparse
import datetime
import json
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from planner.perf.calibration.aic_disagg import DisaggReport, counts, markdown, report_json, run, skip_lines, text_table

CSV_NAME = "aic_silicon.csv"
DEFAULT_CSV = Path(__file__).resolve().parents[2] / "shared" / "calibration" / CSV_NAME
DEFAULT_MARKDOWN = Path(__file__).resolve().parents[1] / "docs" / "aic_disagg_check.md"

# Read off the tables of docs/aic_disagg_check.md when it was generated; re-read them (and
# rewrite this) when the model or the catalog's factors change.
FINDINGS = """
PLACEHOLDER
"""


def main(argv: Sequence[str] | None = None) -> DisaggReport:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--csv", type=Path, default=DEFAULT_CSV, help=f"the measurements (default: {DEFAULT_CSV})")
    parser.add_argument(
        "--markdown",
        type=Path,
        default=DEFAULT_MARKDOWN,
        help="write the report here (default: docs/aic_disagg_check.md)",
    )
    parser.add_argument("--no-markdown", action="store_true", help="print only")
    parser.add_argument("--json", type=Path, help="also write every row and summary as JSON here")
    args = parser.parse_args(argv)
    report = run(args.csv)
    print(text_table(report))
    print(f"\n{counts(report)}:")
    print("\n".join(skip_lines(report)))
    if args.json:
        args.json.write_text(json.dumps(report_json(report), indent=1), encoding="utf-8")
        print(f"\nwrote {args.json}")
    if not args.no_markdown:
        words = ["python", "benchmarks/aic_disagg_check.py", *(argv if argv is not None else sys.argv[1:])]
        findings = FINDINGS if args.csv == DEFAULT_CSV else ""
        args.markdown.write_text(markdown(report, shlex.join(words), datetime.date.today(), findings), encoding="utf-8")
        print(f"\nwrote {args.markdown}")
    return report


if __name__ == "__main__":
    main()
