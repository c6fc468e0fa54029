"""One experiment end to end: load the spec, compute its tables, write the results folder, render it.

The glue between spec, runner, results and report, so that each CLI command stays a few lines.
`compute` is shared by `orderlab run` and `orderlab check`, so a baseline and a fresh run can
never be produced by two different code paths.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from orderlab import report
from orderlab.errors import OrderlabError
from orderlab.results import build_manifest, write_results
from orderlab.spec import LoadedSpec, load_spec

if TYPE_CHECKING:
    import pandas as pd
    from rich.console import RenderableType


@dataclass(frozen=True)
class Computed:
    """A spec's results before they touch the disk: CSV tables by file stem, and the manifest."""

    tables: dict[str, pd.DataFrame]
    manifest: dict


@dataclass(frozen=True)
class Outcome:
    folder: Path
    rows: int  # rows of metrics.csv
    files: list[str]  # file names written into folder
    renderables: list[RenderableType]  # tables for the console, in order


def check_device(device: str) -> None:
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        raise OrderlabError("--device cuda: no CUDA device is available here; expected --device cpu")


def compute(loaded: LoadedSpec, device: str, progress: Callable[[int, int], None] | None = None) -> Computed:
    """Run the spec and return every table `orderlab run` writes, plus its manifest."""
    from orderlab.sweep import run_sweep, summarize_sweep, swept_fields
    from orderlab.trace import attention_maps

    spec = loaded.spec
    check_device(device)
    result = run_sweep(spec, device, progress=progress)
    swept = swept_fields(spec)
    tables = {
        "metrics": result.metrics,
        "summary": summarize_sweep(result.metrics, [choice.label for choice in spec.encodings], list(swept)),
    }
    if "attention" in spec.metrics and spec.inputs:
        tables["attention"] = attention_maps(spec, device)
    manifest = build_manifest(
        spec_name=spec.name, spec_path=loaded.path, spec_sha256=loaded.sha256, seed=spec.seed,
        dtype=spec.model.dtype, device=device, wall_seconds=result.wall_seconds, rows=len(result.metrics),
    )  # fmt: skip
    manifest["sweep"] = swept
    return Computed(tables, manifest)


def render(loaded: LoadedSpec, computed: Computed, width: int = 80) -> list[RenderableType]:
    """The console view of a run: summary tables that fit `width`, then the position probe if measured."""
    from orderlab.sweep import swept_fields

    spec = loaded.spec
    labels = [choice.label for choice in spec.encodings]
    swept = list(swept_fields(spec))
    title = f"{spec.name}: {spec.description}" if spec.description else spec.name
    subjects = report.sweep_subjects(computed.tables["summary"], swept)
    out: list[RenderableType] = list(report.summary_tables(subjects, labels, title, spec.model.dtype, width))
    probe = report.decodability_table(computed.tables["metrics"], labels, swept)
    return out if probe is None else [*out, probe]


def run_and_write(spec_path: Path, out_root: Path, device: str, quiet: bool = False, width: int = 80) -> Outcome:
    loaded = load_spec(spec_path)
    with report.progress_bar(f"running {loaded.spec.name}", quiet) as advance:
        computed = compute(loaded, device, advance)
    folder = out_root / loaded.spec.name
    write_results(folder, computed.tables, computed.manifest)
    files = [f"{name}.csv" for name in computed.tables] + ["manifest.json"]
    rows = len(computed.tables["metrics"])
    return Outcome(folder, rows, files, [] if quiet else render(loaded, computed, width))
