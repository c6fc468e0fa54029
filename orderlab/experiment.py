"""One experiment end to end: load the spec, run it, write the results folder, build the table.

The glue between spec, runner, results and report, so that each CLI command stays a few lines.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.table import Table

from orderlab import report
from orderlab.backends.checks import uses_backend
from orderlab.errors import OrderlabError
from orderlab.results import build_manifest, write_results
from orderlab.runner import run_spec, summarize
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


def run_and_write(spec_path: Path, out_root: Path, device: str, quiet: bool = False) -> Outcome:
    loaded = load_spec(spec_path)
    spec = loaded.spec
    if uses_backend(spec):  # a pretrained model (optional extra): its own loop and outputs
        from orderlab.backends.experiment import run_backend_and_write

        return run_backend_and_write(loaded, out_root, device, quiet)
    check_device(device)
    with report.progress_bar(f"running {spec.name}", quiet) as advance:
        result = run_spec(spec, device, progress=advance)
    labels = [choice.label for choice in spec.encodings]
    summary = summarize(result.metrics, labels)
    manifest = build_manifest(
        spec_name=spec.name, spec_path=loaded.path, spec_sha256=loaded.sha256, seed=spec.seed,
        dtype=spec.model.dtype, device=device, wall_seconds=result.wall_seconds, rows=len(result.metrics),
    )  # fmt: skip
    folder = out_root / spec.name
    write_results(folder, {"metrics": result.metrics, "summary": summary}, manifest)
    title = f"{spec.name}: {spec.description}" if spec.description else spec.name
    return Outcome(folder, len(result.metrics), report.summary_table(summary, labels, title, spec.model.dtype))
