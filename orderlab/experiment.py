"""One experiment end to end: stream its rows into the results folder and return what the console shows, as data.

The glue between spec, sweep and results, so that each CLI command stays a few lines; drawing is report.py's.
`write_experiment` is shared by `orderlab run` and `orderlab check`, so a baseline and a fresh
run can never come from two different code paths.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from orderlab.backends.experiment import describe_model, write_corpus_experiment
from orderlab.backends.specs import CorpusInputs
from orderlab.devices import validate_device
from orderlab.load import LoadedSpec
from orderlab.metric_registry import ATTENTION_FAMILY
from orderlab.models import prefix_sharing
from orderlab.outcome import Outcome, RunView, run_title
from orderlab.ownership import Writer, claim
from orderlab.results import build_manifest, staged_folder, write_csv, write_csv_chunks, write_manifest
from orderlab.spec import uses_backend
from orderlab.streaming import condition_labels, tune_allocator
from orderlab.sweep_run import SweepRun, summarize_sweep
from orderlab.trace import attention_maps

if TYPE_CHECKING:
    pass


def write_experiment(
    loaded: LoadedSpec,
    device: torch.device,
    folder: Path,
    progress: Callable[[int, int], None] | None = None,
    chunk_size: int | None = None,
    force: bool = False,
) -> Outcome:
    """Run the spec and write its results folder atomically: metrics.csv streamed chunk by chunk
    (memory stays flat however many permutations), then summary.csv, attention.csv, manifest.json.

    The folder is claimed before anything is computed, so a folder that is not this spec's (without
    `force`: another spec's or command's) or that another run is writing is refused at once."""
    with claim(folder, Writer("run", loaded.spec.name), force):
        return _write_experiment(loaded, device, folder, progress, chunk_size)


def _write_experiment(
    loaded: LoadedSpec,
    device: torch.device,
    folder: Path,
    progress: Callable[[int, int], None] | None,
    chunk_size: int | None,
) -> Outcome:
    spec = loaded.spec
    if isinstance(spec.inputs, CorpusInputs):  # corpus mode: shuffles of many sentences, in batched passes
        return write_corpus_experiment(loaded, device, folder, progress)
    validate_device(device)
    tune_allocator()
    started = time.perf_counter()
    run = SweepRun(spec, device, chunk_size, progress, loaded.path)
    labels = condition_labels(spec)
    with staged_folder(folder) as staging:  # metrics.csv streamed chunk by chunk, then the small files
        rows = write_csv_chunks(run.frames(), staging / "metrics.csv")
        digest = run.digest()
        tables = {"summary": summarize_sweep(digest, labels, run.swept)}
        drawn = ATTENTION_FAMILY in spec.metrics and spec.inputs and not uses_backend(spec)  # the stack's heatmaps
        maps = attention_maps(spec, device) if drawn else None
        if maps is not None:
            tables["attention"] = maps.frame
        manifest = build_manifest(
            spec_name=spec.name, spec_path=loaded.path, spec_sha256=loaded.sha256, seed=spec.seed,
            dtype=spec.model.dtype, device=device, rows=rows,
        )  # fmt: skip
        manifest["sweep"] = {name: getattr(spec.model, name) for name in run.swept}
        if uses_backend(spec):
            describe_model(spec, manifest)
        elif sharing := prefix_sharing(spec):
            manifest["prefix_sharing"] = sharing  # how each encoding's causal stack ran: shared prefixes or dense
        if maps is not None:
            manifest["attention"] = maps.shown  # attention.csv's input, written once rather than on every row
        for name, frame in tables.items():
            write_csv(frame, staging / f"{name}.csv")
        write_manifest(staging, manifest)
    view = RunView(run_title(spec), spec.model.dtype, labels, run.swept, tables["summary"], digest=digest)
    files = ["metrics.csv", *(f"{name}.csv" for name in tables), "manifest.json"]
    return Outcome(folder, rows, files, view, run.non_finite, time.perf_counter() - started)
