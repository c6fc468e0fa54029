"""`orderlab run` end to end: progress on a terminal, none with --quiet; chunk sizes; CUDA when there is one."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import torch
from rich.console import Console
from typer.testing import CliRunner

from orderlab.cli import app
from orderlab.measure.run_options import RunOptions
from orderlab.report import terminal as report

ROOT = Path(__file__).resolve().parents[2]
PROGRESS_MARKS = ("━", "seq/s", "eta", "\x1b[")


def run_with_terminal(tmp_path, monkeypatch, *options) -> tuple[str, str]:
    """Run with stderr looking like a terminal and the bar due at once; return (CLI output, bar output)."""
    terminal = io.StringIO()
    monkeypatch.setattr(report, "stderr_console", lambda: Console(file=terminal, force_terminal=True, width=100))
    monkeypatch.setattr(report, "PROGRESS_DELAY_SECONDS", 0.0)
    spec = ROOT / "experiments/dog_bites_man.yaml"
    result = CliRunner().invoke(app, ["run", str(spec), "--out", str(tmp_path), "--chunk-size", "2", *options])
    assert result.exit_code == 0, result.output
    return result.output, terminal.getvalue()


def test_progress_bar_draws_on_a_terminal(tmp_path, monkeypatch):
    _, bar = run_with_terminal(tmp_path, monkeypatch)
    assert "━" in bar and "running dog_bites_man" in bar


def test_quiet_output_has_no_progress_characters(tmp_path, monkeypatch):
    output, bar = run_with_terminal(tmp_path, monkeypatch, "--quiet")
    assert bar == ""
    assert not any(mark in output for mark in PROGRESS_MARKS)
    assert not any(mark in (tmp_path / "dog_bites_man/metrics.csv").read_text() for mark in PROGRESS_MARKS)


def test_chunk_size_must_be_positive(tmp_path):
    result = CliRunner().invoke(app, ["run", str(ROOT / "experiments/dog_bites_man.yaml"), "--chunk-size", "0"])
    assert result.exit_code == 2


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (none in this session)")
def test_cuda_run_matches_cpu_run(tmp_path):
    from orderlab.measure.sweep_measure import run_sweep
    from orderlab.spec.load import load_spec

    spec = load_spec(ROOT / "experiments/dog_bites_man.yaml").spec
    cpu, cuda = run_sweep(spec).metrics, run_sweep(spec, RunOptions(torch.device("cuda"))).metrics
    assert cuda[["case", "permutation", "layer", "metric"]].equals(cpu[["case", "permutation", "layer", "metric"]])
    assert ((cuda["value"] - cpu["value"]).abs() <= 1e-9 + 1e-6 * cpu["value"].abs()).all()
    result = CliRunner().invoke(app, ["run", str(ROOT / "experiments/dog_bites_man.yaml"), "--out", str(tmp_path),
                                      "--device", "cuda", "-q"])  # fmt: skip
    assert result.exit_code == 0, result.output
