"""One experiment end to end: load the spec, run it, write the results folder, build the table.

The glue between spec, runner, results and report, so that each CLI command stays a few lines.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from rich.table import Table

from orderlab import report
from orderlab.errors import OrderlabError
from orderlab.results import build_manifest, write_streamed_results
from orderlab.runner import summarize
from orderlab.spec import load_spec


@dataclass(frozen=True)
class Outcome:
    folder: Path
    rows: int
    table: Table


def check_device(device: str) -> None:
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        raise OrderlabError("--device cuda: no CUDA device is available here; expected --device cpu")


def run_and_write(
    spec_path: Path, out_root: Path, device: str, quiet: bool = False, chunk_size: int | None = None
) -> Outcome:
    """Stream the sweep into metrics.csv chunk by chunk (memory stays flat), then write summary.csv and manifest."""
    from orderlab.sweep import Sweep, tune_allocator

    loaded = load_spec(spec_path)
    spec = loaded.spec
    check_device(device)
    tune_allocator()
    labels = [choice.label for choice in spec.encodings]
    started = time.perf_counter()
    written: dict = {}
    with report.progress_bar(f"running {spec.name}", quiet) as advance:
        sweep = Sweep(spec, device, chunk_size, progress=advance)

        def finish(rows: int) -> tuple[dict, dict]:
            written["rows"], written["summary"] = rows, summarize(sweep.worst(), labels)
            manifest = build_manifest(
                spec_name=spec.name, spec_path=loaded.path, spec_sha256=loaded.sha256, seed=spec.seed,
                dtype=spec.model.dtype, device=device, wall_seconds=time.perf_counter() - started, rows=rows,
            )  # fmt: skip
            return {"summary": written["summary"]}, manifest

        write_streamed_results(out_root / spec.name, "metrics", sweep.frames(), finish)
    title = f"{spec.name}: {spec.description}" if spec.description else spec.name
    table = report.summary_table(written["summary"], labels, title, spec.model.dtype)
    return Outcome(out_root / spec.name, written["rows"], table)
