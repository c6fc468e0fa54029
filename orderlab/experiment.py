"""One experiment end to end: load the spec, run it, write the results folder, build the table.

The glue between spec, runner, results and report, so that each CLI command stays a few lines.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.table import Table

from orderlab import report
from orderlab.errors import OrderlabError
from orderlab.results import build_manifest, write_results
from orderlab.spec import load_spec
from orderlab.sweep import run_sweep, summarize_sweep, swept_fields
from orderlab.trace import attention_maps


@dataclass(frozen=True)
class Outcome:
    folder: Path
    rows: int
    tables: list[Table]
    decodability: Table | None = None  # position-probe accuracy per layer, when measured


def check_device(device: str) -> None:
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        raise OrderlabError("--device cuda: no CUDA device is available here; expected --device cpu")


def run_and_write(spec_path: Path, out_root: Path, device: str, quiet: bool = False, width: int = 80) -> Outcome:
    loaded = load_spec(spec_path)
    spec = loaded.spec
    check_device(device)
    with report.progress_bar(f"running {spec.name}", quiet) as advance:
        result = run_sweep(spec, device, progress=advance)
    labels = [choice.label for choice in spec.encodings]
    swept = swept_fields(spec)
    summary = summarize_sweep(result.metrics, labels, list(swept))
    manifest = build_manifest(
        spec_name=spec.name, spec_path=loaded.path, spec_sha256=loaded.sha256, seed=spec.seed,
        dtype=spec.model.dtype, device=device, wall_seconds=result.wall_seconds, rows=len(result.metrics),
    )  # fmt: skip
    manifest["sweep"] = swept
    folder = out_root / spec.name
    tables = {"metrics": result.metrics, "summary": summary}
    if "attention" in spec.metrics and spec.inputs:
        tables["attention"] = attention_maps(spec, device)
    write_results(folder, tables, manifest)
    title = f"{spec.name}: {spec.description}" if spec.description else spec.name
    tables = report.summary_tables(report.sweep_subjects(summary, list(swept)), labels, title, spec.model.dtype, width)
    return Outcome(folder, len(result.metrics), tables, report.decodability_table(result.metrics, labels, list(swept)))
