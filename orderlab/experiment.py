"""One experiment end to end: load the spec, stream its rows into the results folder, render it.

The glue between spec, sweep, results and report, so that each CLI command stays a few lines.
`write_experiment` is shared by `orderlab run` and `orderlab check`, so a baseline and a fresh
run can never come from two different code paths.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from orderlab import report
from orderlab.backends.checks import uses_backend
from orderlab.errors import OrderlabError
from orderlab.metric_registry import ATTENTION_FAMILY
from orderlab.ownership import Writer, claim
from orderlab.results import build_manifest, write_streamed_results
from orderlab.spec import LoadedSpec, load_spec

if TYPE_CHECKING:
    import pandas as pd
    from rich.console import RenderableType


@dataclass(frozen=True)
class Outcome:
    folder: Path
    rows: int  # rows of metrics.csv
    files: list[str]  # file names written into folder, metrics.csv first
    renderables: list[RenderableType]  # tables for the console, in order
    non_finite: int  # rows whose value came out NaN or inf (verdict non-finite): the run failed to measure them
    seconds: float  # wall time of the run


def check_device(device: str) -> None:
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        raise OrderlabError("--device cuda: no CUDA device is available here; expected --device cpu")


def write_experiment(
    loaded: LoadedSpec,
    device: str,
    folder: Path,
    progress: Callable[[int, int], None] | None = None,
    chunk_size: int | None = None,
    width: int = 80,
    force: bool = False,
) -> Outcome:
    """Run the spec and write its results folder atomically: metrics.csv streamed chunk by chunk
    (memory stays flat however many permutations), then summary.csv, attention.csv, manifest.json.

    The folder is claimed before anything is computed, so a folder that is not this spec's (without
    `force`: another spec's or command's) or that another run is writing is refused at once."""
    with claim(folder, Writer("run", loaded.spec.name), force):
        return _write_experiment(loaded, device, folder, progress, chunk_size, width)


def _write_experiment(
    loaded: LoadedSpec,
    device: str,
    folder: Path,
    progress: Callable[[int, int], None] | None,
    chunk_size: int | None,
    width: int,
) -> Outcome:
    from orderlab.streaming import tune_allocator
    from orderlab.sweep import SweepRun, summarize_sweep
    from orderlab.trace import attention_maps

    spec = loaded.spec
    if uses_backend(spec):  # a pretrained model (optional extra): its own loop and outputs
        from orderlab.backends.experiment import write_backend_experiment

        return write_backend_experiment(loaded, device, folder, progress, width)
    check_device(device)
    tune_allocator()
    started = time.perf_counter()
    run = SweepRun(spec, device, chunk_size, progress)
    labels = [choice.label for choice in spec.encodings]
    finished: dict = {}

    def finish(rows: int) -> tuple[dict[str, pd.DataFrame], dict]:
        digest = run.digest()
        tables = {"summary": summarize_sweep(digest, labels, run.swept)}
        maps = attention_maps(spec, device) if ATTENTION_FAMILY in spec.metrics and spec.inputs else None
        if maps is not None:
            tables["attention"] = maps.frame
        manifest = build_manifest(
            spec_name=spec.name, spec_path=loaded.path, spec_sha256=loaded.sha256, seed=spec.seed,
            dtype=spec.model.dtype, device=device, rows=rows,
        )  # fmt: skip
        manifest["sweep"] = {name: getattr(spec.model, name) for name in run.swept}
        if maps is not None:
            manifest["attention"] = maps.shown  # attention.csv's input, written once rather than on every row
        finished.update(rows=rows, digest=digest, summary=tables["summary"], files=[f"{name}.csv" for name in tables])
        return tables, manifest

    write_streamed_results(folder, "metrics", run.frames(), finish)
    renderables = render(loaded, finished["summary"], finished["digest"], run.swept, width)
    files = ["metrics.csv", *finished["files"], "manifest.json"]
    return Outcome(folder, finished["rows"], files, renderables, run.non_finite, time.perf_counter() - started)


def render(
    loaded: LoadedSpec, summary: pd.DataFrame, digest: pd.DataFrame, swept: list[str], width: int
) -> list[RenderableType]:
    """The console view of a run: summary tables that fit `width`, then the position probe if measured."""
    spec = loaded.spec
    labels = [choice.label for choice in spec.encodings]
    title = f"{spec.name}: {spec.description}" if spec.description else spec.name
    tables = report.summary_tables(report.sweep_subjects(summary, swept), labels, title, spec.model.dtype, width)
    probe = report.decodability_table(digest, labels, swept)
    return [*tables] if probe is None else [*tables, probe]


def run_and_write(
    spec_path: Path,
    out_root: Path,
    device: str,
    quiet: bool = False,
    width: int = 80,
    chunk_size: int | None = None,
    force: bool = False,
) -> Outcome:
    loaded = load_spec(spec_path)
    with report.progress_bar(f"running {loaded.spec.name}", quiet) as advance:
        return write_experiment(loaded, device, out_root / loaded.spec.name, advance, chunk_size, width, force)
