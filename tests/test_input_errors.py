"""Bad input through the real command line: one clear message, exit code 2, never a traceback.

Contract (shared/design/problem-format.md): exit 2 when "the input is wrong (file missing, bad YAML,
schema error, unknown GPU or model: one clear message naming the file, the key and the line, no
traceback)". Each case copies problems/startup.yaml, breaks one thing and runs `planner validate`
(errors caught before solving need no solver, so these stay fast).
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.cli import app

GOOD = Path(__file__).resolve().parents[1] / "problems" / "startup.yaml"
CSV_HEADER = "category,item,sku,quantity,unit_price_usd,extended_price_usd,unit_power_w,notes"


@dataclass
class Run:
    code: int
    output: str  # stdout and stderr together: the message may go to either, a traceback to neither


def planner(*args: str | Path) -> Run:
    result = CliRunner().invoke(app, [str(a) for a in args])
    # CliRunner catches exceptions: anything but SystemExit escaping the CLI is a crash, not a message.
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return Run(result.exit_code, result.output)


def planner_process(*args: str | Path, cwd: Path) -> Run:
    """The installed entry point in a fresh interpreter: what a user's script sees."""
    done = subprocess.run(
        [sys.executable, "-m", "planner", *(str(a) for a in args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )
    return Run(done.returncode, done.stdout + done.stderr)


def good_text() -> str:
    return GOOD.read_text(encoding="utf-8")


def write(tmp_path: Path, text: str | bytes, name: str = "problem.yaml") -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def mutate(tmp_path: Path, old: str, new: str) -> tuple[Path, str]:
    """startup.yaml with one edit; fails loudly if the baseline no longer has ``old``."""
    text = good_text()
    assert text.count(old) == 1, f"baseline problem changed: {old!r} not found exactly once"
    changed = text.replace(old, new)
    return write(tmp_path, changed), changed


def line_no(text: str, needle: str, nth: int = 1) -> int:
    """1-based line of the ``nth`` line containing ``needle``."""
    hits = [i for i, line in enumerate(text.splitlines(), 1) if needle in line]
    assert len(hits) >= nth, f"{needle!r} not in the text"
    return hits[nth - 1]


def exact_line_no(text: str, stripped: str) -> int:
    """1-based line that reads exactly ``stripped`` (``llama-3.1-70`` must not match ``llama-3.1-70b``)."""
    return next(i for i, line in enumerate(text.splitlines(), 1) if line.strip() == stripped)


def assert_input_error(
    run: Run,
    *,
    file: Path | None = None,
    line: int | None = None,
    key: str | None = None,
    says: tuple[str, ...] = (),
) -> None:
    assert run.code == 2, run.output
    assert "Traceback" not in run.output, run.output
    assert "error:" in run.output, run.output
    # One message, not a wall of them.
    assert len([x for x in run.output.splitlines() if x.strip()]) == 1, run.output
    if file is not None:
        where = f"{file}:{line}:" if line is not None else f"{file}"
        assert where in run.output, f"expected {where!r} in: {run.output}"
    if key is not None:
        assert f"{key}:" in run.output, f"expected key {key!r} in: {run.output}"
    for phrase in says:
        assert phrase.lower() in run.output.lower(), f"expected {phrase!r} in: {run.output}"


# --- the file itself --------------------------------------------------------------------------------


def test_good_problem_validates() -> None:
    run = planner("validate", GOOD)
    assert run.code == 0, run.output
    assert "ok" in run.output
    assert "Traceback" not in run.output


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    assert_input_error(planner("validate", path), file=path, says=("not found",))


def test_missing_file_in_a_subprocess(tmp_path: Path) -> None:
    run = planner_process("validate", "nope.yaml", cwd=tmp_path)
    assert_input_error(run, file=Path("nope.yaml"), says=("not found",))


def test_directory_instead_of_file(tmp_path: Path) -> None:
    assert_input_error(planner("validate", tmp_path), file=tmp_path, says=("directory",))


def test_path_through_a_file(tmp_path: Path) -> None:
    path = write(tmp_path, "name: x\n", "plain.yaml") / "x.yaml"
    assert_input_error(planner("validate", path), file=path, says=("cannot read",))


@pytest.mark.parametrize(
    "text", ["", "   \n\n\t \n", "# only a comment\n", "---\n"], ids=["empty", "blank", "comment", "bare-doc"]
)
def test_empty_file(tmp_path: Path, text: str) -> None:
    path = write(tmp_path, text)
    assert_input_error(planner("validate", path), file=path, says=("empty", "startup.yaml"))


def test_huge_file_refused(tmp_path: Path) -> None:
    path = write(tmp_path, good_text() + ("# padding " + "x" * 100 + "\n") * 22_000)
    assert path.stat().st_size > 2_000_000
    start = time.perf_counter()
    assert_input_error(planner("validate", path), file=path, says=("limit", "bytes"))
    assert time.perf_counter() - start < 5


def test_non_utf8_bytes(tmp_path: Path) -> None:
    text = good_text().replace("description: ", "description: caf\xe9 ", 1)
    path = write(tmp_path, text.encode("latin-1"))
    assert_input_error(planner("validate", path), file=path, line=line_no(text, "description:"), says=("UTF-8",))


def test_utf8_bom_is_accepted(tmp_path: Path) -> None:
    path = write(tmp_path, b"\xef\xbb\xbf" + good_text().encode("utf-8"))
    assert planner("validate", path).code == 0


def test_control_character(tmp_path: Path) -> None:
    text = good_text().replace("description: ", "description: a\x00b ", 1)
    path = write(tmp_path, text)
    assert_input_error(planner("validate", path), file=path, line=line_no(text, "description:"), says=("control",))


# --- YAML syntax ------------------------------------------------------------------------------------


def test_unclosed_bracket_names_both_lines(tmp_path: Path) -> None:
    path, text = mutate(tmp_path, "precisions: [fp8, int4]", "precisions: [fp8, int4")
    opened = line_no(text, "precisions:")
    run = planner("validate", path)
    # PyYAML notices on the next line; the message also says where the bracket was opened.
    assert_input_error(run, file=path, line=opened + 1, says=("malformed YAML", f"line {opened}"))


def test_bad_indentation(tmp_path: Path) -> None:
    path, text = mutate(tmp_path, "\n  pue: 1.35", "\n    pue: 1.35")
    run = planner("validate", path)
    assert_input_error(run, file=path, line=line_no(text, "pue:"), says=("malformed YAML", "indentation"))


def test_tab_indentation(tmp_path: Path) -> None:
    path, text = mutate(tmp_path, "\n  pue: 1.35", "\n\tpue: 1.35")
    run = planner("validate", path)
    assert_input_error(run, file=path, line=line_no(text, "pue:"), says=("malformed YAML", "tabs"))


def test_unclosed_quote(tmp_path: Path) -> None:
    path = write(tmp_path, 'name: "startup\ntraining: []\n')
    assert_input_error(planner("validate", path), file=path, says=("malformed YAML", "line 1"))


def test_two_documents(tmp_path: Path) -> None:
    path = write(tmp_path, good_text() + "---\nname: second\n")
    assert_input_error(planner("validate", path), file=path, says=("single document",))


def test_malformed_yaml_in_a_subprocess(tmp_path: Path) -> None:
    path, text = mutate(tmp_path, "precisions: [fp8, int4]", "precisions: [fp8, int4")
    run = planner_process("validate", path.name, cwd=tmp_path)
    assert_input_error(run, file=Path(path.name), line=line_no(text, "precisions:") + 1, says=("malformed YAML",))


@pytest.mark.parametrize(
    ("text", "got"),
    [("- name: a\n- name: b\n", "a list"), ("just a sentence\n", "text"), ("42\n", "a number")],
    ids=["list", "string", "number"],
)
def test_top_level_not_a_mapping(tmp_path: Path, text: str, got: str) -> None:
    path = write(tmp_path, text)
    assert_input_error(planner("validate", path), file=path, line=1, says=("expected a mapping", got))


@pytest.mark.parametrize(
    ("old", "new", "key"),
    [
        ("\n  pue: 1.35", "\n  pue: 1.35\n  pue: 1.4", "finance.pue"),
        ("\ntraining:", "\nname: again\ntraining:", "name"),
    ],
    ids=["nested", "top-level"],
)
def test_duplicate_yaml_keys(tmp_path: Path, old: str, new: str, key: str) -> None:
    path, text = mutate(tmp_path, old, new)
    last = key.rsplit(".", 1)[-1]
    first, second = line_no(text, f"{last}:"), line_no(text, f"{last}:", 2)
    run = planner("validate", path)
    assert_input_error(run, file=path, line=second, key=key, says=(f"duplicate key '{last}'", f"first on line {first}"))


@pytest.mark.parametrize("key", ["1", "null", "[a, b]"], ids=["number", "null", "list"])
def test_keys_must_be_text(tmp_path: Path, key: str) -> None:
    path, text = mutate(tmp_path, "\n  pue: 1.35", f"\n  pue: 1.35\n  ? {key}\n  : 3")
    run = planner("validate", path)
    assert_input_error(run, file=path, line=line_no(text, f"? {key}"), key="finance", says=("keys must be text",))


def test_deep_nesting_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "name: " + "[" * 5000 + "]" * 5000 + "\n")
    assert_input_error(planner("validate", path), file=path, says=("nested too deeply",))


def test_python_object_tag_is_refused_and_not_run(tmp_path: Path) -> None:
    canary = tmp_path / "pwned"
    path, text = mutate(tmp_path, "name: startup", f'name: !!python/object/apply:os.system ["touch {canary}"]')
    run = planner("validate", path)
    assert_input_error(run, file=path, line=line_no(text, "name: !!python"), key="name", says=("unsupported YAML",))
    assert not canary.exists()


def test_python_object_tag_in_a_subprocess(tmp_path: Path) -> None:
    canary = tmp_path / "pwned"
    path, _ = mutate(
        tmp_path, "  pue: 1.35", f'  pue: !!python/object/new:subprocess.check_call [["touch", "{canary}"]]'
    )
    run = planner_process("validate", path.name, cwd=tmp_path)
    assert_input_error(run, file=Path(path.name), key="finance.pue", says=("unsupported YAML",))
    assert not canary.exists()


def test_billion_laughs_refused_quickly(tmp_path: Path) -> None:
    lines = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, 10):
        prev, cur = chr(ord("a") + level - 1), chr(ord("a") + level)
        lines.append(f"{cur}: &{cur} [" + ", ".join([f"*{prev}"] * 10) + "]")
    path = write(tmp_path, "name: bomb\n" + "\n".join(lines) + "\n")
    start = time.perf_counter()
    assert_input_error(planner("validate", path), file=path, says=("refusing",))
    assert time.perf_counter() - start < 5


def test_merge_keys_are_allowed(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "name: m\ntraining:\n  - &base\n    name: a\n    model: llama-3.1-8b\n    tokens: 1.0e9\n"
        "    deadline_days: 30\n  - <<: *base\n    name: b\n",
    )
    run = planner("validate", path)
    assert run.code == 0, run.output


# --- schema: keys and types -------------------------------------------------------------------------


def test_unknown_top_level_key_did_you_mean(tmp_path: Path) -> None:
    path, text = mutate(tmp_path, "\ntraining:", "\ntrainig:")
    run = planner("validate", path)
    assert_input_error(
        run, file=path, line=line_no(text, "trainig:"), key="trainig", says=("unknown key", "did you mean 'training'")
    )


def test_unknown_nested_key_names_path_and_line(tmp_path: Path) -> None:
    path, text = mutate(tmp_path, "budget_usd:", "budget_us:")
    run = planner("validate", path)
    assert_input_error(
        run,
        file=path,
        line=line_no(text, "budget_us:"),
        key="finance.budget_us",
        says=("unknown key", "did you mean 'budget_usd'"),
    )


def test_unknown_key_in_a_workload(tmp_path: Path) -> None:
    path, text = mutate(tmp_path, "    deadline_days: 45", "    deadline_day: 45")
    run = planner("validate", path)
    # The typo is the cause; the "missing deadline_days" it causes is counted, not shown first.
    assert_input_error(
        run,
        file=path,
        line=line_no(text, "deadline_day:"),
        key="training.pretrain-3b.deadline_day",
        says=("unknown key", "did you mean 'deadline_days'"),
    )


@pytest.mark.parametrize(
    ("old", "new", "key", "says"),
    [
        ("power_kw: 250", 'power_kw: "250"', "site.power_kw", ("expected a number", "without quotes")),
        ("power_kw: 250", "power_kw: yes", "site.power_kw", ("expected a number", "booleans")),
        ("power_kw: 250", "power_kw: lots", "site.power_kw", ("expected a number", "'lots'")),
        ("racks: 8", "racks: 8.5", "site.racks", ("whole number", "8.5")),
        ("horizon_years: 3", "horizon_years: [3]", "horizon_years", ("whole number", "a list")),
        ("tokens: 6.0e11", "tokens: {n: 6}", "training.pretrain-3b.tokens", ("expected a number", "a mapping")),
        ("name: startup", "name: 42", "name", ("expected text", "quotes")),
        ("name: startup", "name:", "name", ("expected text", "empty")),
        ("precision: bf16", "precision: fp16", "training.pretrain-3b.precision", ("'bf16' or 'fp8'", "'fp16'")),
        ("model: {params_b: 3.0}", "model: 5", "training.pretrain-3b.model", ("model name", "params_b")),
        ("precisions: [fp8, int4]", "precisions: []", "inference.chat.precisions", ("at least 1",)),
    ],
    ids=[
        "quoted-number",
        "yes",
        "word",
        "float-for-int",
        "list-for-int",
        "mapping-for-number",
        "number-for-name",
        "null-name",
        "literal",
        "model-type",
        "empty-list",
    ],
)
def test_wrong_types(tmp_path: Path, old: str, new: str, key: str, says: tuple[str, ...]) -> None:
    path, text = mutate(tmp_path, old, new)
    run = planner("validate", path)
    assert_input_error(run, file=path, line=line_no(text, new.split(":")[0] + ":"), key=key, says=says)


def _site_as_list(text: str) -> str:
    start = text.index("\nsite:\n")
    end = text.index("\n\n", start + 1)
    return text[:start] + "\nsite: [250, 8]" + text[end:]


def test_list_for_a_mapping(tmp_path: Path) -> None:
    changed = _site_as_list(good_text())
    path = write(tmp_path, changed)
    run = planner("validate", path)
    assert_input_error(
        run, file=path, line=line_no(changed, "site: [250"), key="site", says=("expected a mapping", "a list")
    )


def test_several_errors_show_one_and_count_the_rest(tmp_path: Path) -> None:
    changed = _site_as_list(good_text()).replace("horizon_years:", "horizon_year:")
    path = write(tmp_path, changed)
    run = planner("validate", path)
    # The typo is shown (did-you-mean), the list-for-mapping is counted.
    assert_input_error(
        run,
        file=path,
        line=line_no(changed, "horizon_year:"),
        key="horizon_year",
        says=("did you mean 'horizon_years'", "1 more error"),
    )


@pytest.mark.parametrize(
    ("old", "new", "key", "says"),
    [
        ("power_kw: 250", "power_kw: -250", "site.power_kw", ("greater than 0", "-250")),
        ("budget_usd: 4000000", "budget_usd: 0", "finance.budget_usd", ("greater than 0",)),
        ("racks: 8", "racks: 0", "site.racks", ("greater than or equal to 1",)),
        ("tokens: 6.0e11", "tokens: 0", "training.pretrain-3b.tokens", ("greater than 0",)),
        ("requests_per_s: 20", "requests_per_s: -1", "inference.chat.requests_per_s", ("greater than 0",)),
        ("spare_replicas: 1", "spare_replicas: -1", "inference.chat.spare_replicas", ("greater than or equal to 0",)),
        ("power_kw: 250", "power_kw: .nan", "site.power_kw", ("finite number", "nan")),
        ("power_kw: 250", "power_kw: .inf", "site.power_kw", ("finite number", "inf")),
        ("tokens: 6.0e11", "tokens: -.inf", "training.pretrain-3b.tokens", ("finite number",)),
        ("tokens: 6.0e11", "tokens: 1e400", "training.pretrain-3b.tokens", ("finite number",)),
        ("pue: 1.35", "pue: 0.9", "finance.pue", ("greater than or equal to 1",)),
    ],
    ids=[
        "negative",
        "zero-budget",
        "zero-racks",
        "zero-tokens",
        "negative-rps",
        "negative-spares",
        "nan",
        "inf",
        "minus-inf",
        "overflow",
        "pue-below-1",
    ],
)
def test_out_of_range_numbers(tmp_path: Path, old: str, new: str, key: str, says: tuple[str, ...]) -> None:
    path, text = mutate(tmp_path, old, new)
    run = planner("validate", path)
    assert_input_error(run, file=path, line=line_no(text, new.split(":")[0] + ":"), key=key, says=says)


def test_release_day_after_deadline(tmp_path: Path) -> None:
    path, text = mutate(tmp_path, "    deadline_days: 45\n", "    deadline_days: 45\n    release_day: 50\n")
    run = planner("validate", path)
    assert_input_error(
        run,
        file=path,
        line=line_no(text, "release_day:"),
        key="training.pretrain-3b.release_day",
        says=("release_day", "deadline_days"),
    )


@pytest.mark.parametrize(
    ("old", "new", "needle", "key", "says"),
    [
        (
            "    spare_replicas: 1",
            "    spare_replicas: 1\n    growth_per_year: 0.5\n    requests_per_s_by_year: [20, 30]",
            "growth_per_year:",
            "inference.chat.growth_per_year",
            ("not both",),
        ),
        (
            "\ntraining:",
            "\ncatalog:\n  prices_usd: {H100-SXM: -5}\n\ntraining:",
            "prices_usd:",
            "catalog.prices_usd.H100-SXM",
            ("positive price",),
        ),
    ],
    ids=["growth-both", "negative-quote"],
)
def test_cross_field_checks_point_at_their_key(
    tmp_path: Path, old: str, new: str, needle: str, key: str, says: tuple[str, ...]
) -> None:
    path, text = mutate(tmp_path, old, new)
    run = planner("validate", path)
    assert_input_error(run, file=path, line=line_no(text, needle), key=key, says=says)


def test_bad_workload_name(tmp_path: Path) -> None:
    path, text = mutate(tmp_path, "name: chat", 'name: "[bold]chat"')
    run = planner("validate", path)
    # The name is quoted verbatim (not eaten as terminal markup) and the path uses the index.
    assert_input_error(
        run,
        file=path,
        line=line_no(text, "[bold]chat"),
        key="inference[0].name",
        says=("letter or digit", "[bold]chat"),
    )


# --- workloads and references -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text",),
    [("name: idle\n",), ("name: idle\ntraining: []\ninference: []\n",)],
    ids=["no-keys", "empty-lists"],
)
def test_no_workloads(tmp_path: Path, text: str) -> None:
    path = write(tmp_path, text)
    assert_input_error(planner("validate", path), file=path, says=("no workloads", "training", "inference"))


def test_duplicate_workload_names_in_training(tmp_path: Path) -> None:
    path, text = mutate(tmp_path, "name: finetune-70b", "name: pretrain-3b")
    run = planner("validate", path)
    first = line_no(text, "name: pretrain-3b")
    assert_input_error(
        run,
        file=path,
        line=line_no(text, "name: pretrain-3b", 2),
        key="training[1].name",
        says=("'pretrain-3b'", f"line {first}"),
    )


def test_duplicate_workload_names_across_kinds_ignore_case(tmp_path: Path) -> None:
    path, text = mutate(tmp_path, "name: chat", "name: Pretrain-3B")
    run = planner("validate", path)
    assert_input_error(
        run,
        file=path,
        line=line_no(text, "name: Pretrain-3B"),
        key="inference[0].name",
        says=("'Pretrain-3B'", "training[0]", f"line {line_no(text, 'name: pretrain-3b')}", "case"),
    )


def test_after_names_unknown_job(tmp_path: Path) -> None:
    path, text = mutate(tmp_path, "after: [pretrain-3b]", "after: [pretrain-3]")
    run = planner("validate", path)
    assert_input_error(
        run,
        file=path,
        line=line_no(text, "after:"),
        key="training.finetune-70b.after",
        says=("unknown training job 'pretrain-3'", "did you mean 'pretrain-3b'"),
    )


def test_after_cycle(tmp_path: Path) -> None:
    path, text = mutate(tmp_path, "    precision: bf16\n", "    precision: bf16\n    after: [finetune-70b]\n")
    run = planner("validate", path)
    assert_input_error(
        run,
        file=path,
        line=line_no(text, "after: [finetune-70b]"),
        key="training.pretrain-3b.after",
        says=("cycle", "pretrain-3b -> finetune-70b -> pretrain-3b"),
    )


def test_after_itself(tmp_path: Path) -> None:
    path, text = mutate(tmp_path, "after: [pretrain-3b]", "after: [finetune-70b]")
    run = planner("validate", path)
    assert_input_error(
        run, file=path, line=line_no(text, "after:"), key="training.finetune-70b.after", says=("after itself",)
    )


@pytest.mark.parametrize(
    ("section", "key"),
    [
        ("  exclude: [H100-SMX]", "catalog.exclude[0]"),
        ("  prices_usd: {H100-SMX: 27000}", "catalog.prices_usd.H100-SMX"),
    ],
    ids=["exclude", "prices"],
)
def test_unknown_gpu_did_you_mean(tmp_path: Path, section: str, key: str) -> None:
    path, text = mutate(tmp_path, "\ntraining:", f"\ncatalog:\n{section}\n\ntraining:")
    run = planner("validate", path)
    assert_input_error(
        run,
        file=path,
        line=line_no(text, "H100-SMX"),
        key=key,
        says=("unknown GPU 'H100-SMX'", "did you mean 'H100-SXM'"),
    )


def test_unknown_model_did_you_mean(tmp_path: Path) -> None:
    text = good_text()
    changed = text.replace("model: llama-3.1-70b\n    method", "model: llama-3.1-70\n    method", 1)
    assert changed != text
    path = write(tmp_path, changed)
    run = planner("validate", path)
    assert_input_error(
        run,
        file=path,
        line=exact_line_no(changed, "model: llama-3.1-70"),
        key="training.finetune-70b.model",
        says=("unknown model 'llama-3.1-70'", "did you mean 'llama-3.1-70b'"),
    )


def test_unknown_model_is_caught_by_solve_too(tmp_path: Path) -> None:
    path, text = mutate(tmp_path, "    model: llama-3.1-70b\n    precisions", "    model: llama-3.1-70\n    precisions")
    run = planner("solve", path, "--quiet")
    assert_input_error(
        run,
        file=path,
        line=exact_line_no(text, "model: llama-3.1-70"),
        key="inference.chat.model",
        says=("did you mean 'llama-3.1-70b'",),
    )


# --- other commands ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("--gpu", "H100-SMX", ("unknown GPU 'H100-SMX'", "did you mean 'H100-SXM'")),
        ("--model", "llama-2-70", ("unknown model 'llama-2-70'", "did you mean 'llama-2-70b'")),
        ("--precision", "fp9", ("unknown precision 'fp9'", "fp8")),
    ],
    ids=["gpu", "model", "precision"],
)
def test_estimate_inference_unknown_names(option: str, value: str, says: tuple[str, ...]) -> None:
    args = {"--model": "llama-2-70b", "--gpu": "H100-SXM", "--precision": "fp8"}
    args[option] = value
    flat = [x for pair in args.items() for x in pair]
    run = planner("estimate", "inference", *flat, "--gpus", "8", "--json")
    assert_input_error(run, key=option, says=says)


def test_catalog_nonsense() -> None:
    assert_input_error(planner("catalog", "nonsense"), says=("unknown catalog 'nonsense'", "gpus"))


def test_catalog_near_miss_suggests() -> None:
    assert_input_error(planner("catalog", "gpu"), says=("did you mean 'gpus'",))


def test_options_on_a_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    assert_input_error(planner("options", path), file=path, says=("not found",))


# --- output files: whole or not at all --------------------------------------------------------------


def test_solve_into_missing_folder_writes_nothing(tmp_path: Path) -> None:
    target = tmp_path / "no-such-dir" / "plan.json"
    run = planner("solve", GOOD, "--quiet", "--json", target)
    assert_input_error(run, file=target, says=("folder does not exist",))
    assert list(tmp_path.iterdir()) == []


def test_solve_writes_no_output_when_another_output_fails(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    run = planner("solve", GOOD, "--quiet", "--json", out / "plan.json", "--csv", tmp_path / "missing" / "p.csv")
    assert run.code == 2
    assert list(out.iterdir()) == []


def test_solve_into_unwritable_folder(tmp_path: Path) -> None:
    run = planner("solve", GOOD, "--quiet", "--json", "/proc/plan.json")
    assert run.code == 2, run.output
    assert "Traceback" not in run.output
    assert "/proc/" in run.output


def test_solve_writes_whole_json_and_csv(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    run = planner("solve", GOOD, "--quiet", "--json", out / "plan.json", "--csv", out / "purchase.csv")
    assert run.code == 0, run.output
    plan = json.loads((out / "plan.json").read_text(encoding="utf-8"))
    assert plan["status"] in ("optimal", "feasible")
    assert plan["problem"] == "startup"
    text = (out / "purchase.csv").read_text(encoding="utf-8")
    assert text.splitlines()[0] == CSV_HEADER
    rows = list(csv.DictReader(io.StringIO(text)))
    assert rows, "the purchase list is empty"
    assert sum(float(r["extended_price_usd"]) for r in rows) == pytest.approx(plan["capex_usd"], rel=1e-6)
    # Written through a temporary file and renamed: nothing else may be left in the folder.
    assert sorted(p.name for p in out.iterdir()) == ["plan.json", "purchase.csv"]


def test_output_files_get_the_usual_permissions(tmp_path: Path) -> None:
    mask = os.umask(0o022)
    os.umask(mask)
    run = planner("solve", GOOD, "--quiet", "--csv", tmp_path / "p.csv")
    assert run.code == 0, run.output
    assert (tmp_path / "p.csv").stat().st_mode & 0o777 == 0o666 & ~mask
