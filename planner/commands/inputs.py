"""What goes into a plan: `planner catalog` (the bundled data) and `planner import-melange`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from planner.commands.common import err, escape, out, user_errors
from planner.errors import InputError


@user_errors
def catalog(
    table: Annotated[str, typer.Argument(help="gpus | servers | fabrics | models | import-model")] = "gpus",
    config: Annotated[Path | None, typer.Argument(help="import-model: a Hugging Face config.json")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
    model_id: Annotated[str | None, typer.Option("--id", help="import-model: the entry's id")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="import-model: YAML file to write")] = None,
) -> None:
    """What the planner knows, with sources; `catalog import-model CONFIG.json` turns a model's
    config.json into a catalog entry (models.yaml format)."""
    if table.lower() == "import-model":
        _import_model(config, model_id, output)
        return
    from planner.report.catalog_view import show_catalog

    show_catalog(table, as_json, out)


def _import_model(config: Path | None, model_id: str | None, output: Path | None) -> None:
    from planner.io.files import loads_json, read_input_text
    from planner.io.hf_config import model_entry_yaml, model_from_config
    from planner.report.files import check_writable, write_all

    if config is None:
        raise InputError("name the model's config.json: planner catalog import-model CONFIG.json", key="CONFIG")
    check_writable([output], streams=[])
    text = read_input_text(config, "a model's config.json", 1_000_000)
    name = model_id or (config.parent.name if config.name == "config.json" and config.parent.name else config.stem)
    model, params_b = model_from_config(loads_json(text, str(config)), model_id=name)
    entry = (
        f"# {model.id}: {params_b:,.2f}B parameters derived from {config.name} "
        f"({model.active_params_b:,.2f}B active per token)\n" + model_entry_yaml(model)
    )
    if output is None:
        typer.echo(entry, nl=False)
    else:
        write_all({output: entry})
        err.print(f"wrote {escape(str(output))}: {escape(model.id)}, {params_b:,.2f}B parameters", emoji=False)


@user_errors
def import_melange(
    config: Annotated[Path, typer.Argument(help="Mélange solver config (JSON), e.g. melange/config/example.json")],
    output: Annotated[Path, typer.Option("--output", "-o", help="problem file to write (YAML)")],
    gpu: Annotated[
        list[str] | None, typer.Option("--gpu", help="NAME=ID: map a Mélange GPU name to a catalog id (repeatable)")
    ] = None,
    input_sizes: Annotated[
        str | None,
        typer.Option("--input-sizes", help="prompt tokens per row bucket, e.g. 25,100 (default: 25,100,250,...)"),
    ] = None,
    output_sizes: Annotated[
        str | None,
        typer.Option("--output-sizes", help="output tokens per column bucket (default: 25,100,250,...)"),
    ] = None,
    name: Annotated[str | None, typer.Option("--name", help="problem name (default: melange-<config name>)")] = None,
) -> None:
    """Convert a Mélange config (GPU costs, throughputs per request-size bucket) into a rent-only problem."""
    from planner.io.melange import import_config, parse_gpu_map, parse_sizes
    from planner.io.problem_io import loads_problem
    from planner.report.files import check_writable, write_all

    check_writable([output])
    imported = import_config(
        config,
        gpu_map=parse_gpu_map(gpu or []),
        input_sizes=parse_sizes(input_sizes, "--input-sizes"),
        output_sizes=parse_sizes(output_sizes, "--output-sizes"),
        name=name,
    )
    try:  # the planner must read what was written; a failure here is the converter's bug, not the user's
        loads_problem(imported.text, str(output))
    except InputError as exc:
        err.print(f"[bold yellow]warning:[/bold yellow] the problem written does not load: {escape(str(exc))}")
    write_all({output: imported.text})
    inst = imported.instance
    rows, cols = inst.shape
    out.print(
        f"{output}: {len(inst.gpus)} GPU types ({', '.join(f'{k} -> {v}' for k, v in imported.gpu_ids.items())}), "
        f"{len(inst.buckets())} of {rows}x{cols} buckets, {inst.total_request_rate:g} requests/s, "
        f"slice factor {inst.slice_factor}",
        markup=False,
    )
