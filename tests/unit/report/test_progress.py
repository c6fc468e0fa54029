"""Every long phase of a command is drawn on the terminal with what it is doing, and the time a command prints is its
wall time, every phase included.

Each test slows one phase down by a pause before the production code runs (the code itself still runs), then reads
the printed time: it must cover the pauses and stay within the wall clock measured around the command."""

from __future__ import annotations

import io
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from orderlab.cli import app
from orderlab.commands import check as checking
from orderlab.commands import compare as comparing
from orderlab.commands import properties, trace  # the modules the CLI calls: their phases are patched
from orderlab.measure.run_options import RunOptions
from orderlab.measure.sweep_measure import run_sweep
from orderlab.report import figures, html
from orderlab.report import terminal as report
from orderlab.spec.extras import installed
from orderlab.spec.load import load_spec

ROOT = Path(__file__).resolve().parents[3]
SPEC = ROOT / "experiments/dog_bites_man.yaml"
PAUSE = 0.5  # seconds added to a phase


def light(folder: Path) -> Path:
    """The flagship spec without its attention maps (a figure per map): its phases are under test, not its drawing."""
    path = folder / SPEC.name
    path.write_text(
        SPEC.read_text().replace("metrics: [equivariance, invariance, attention,", "metrics: [equivariance,")
    )
    assert "attention" not in path.read_text().split("metrics:")[-1]
    return path


def paused(function: Callable[..., Any]) -> Callable[..., Any]:
    """`function` after a pause: a slow phase whose production code still runs."""

    def slow(*args: Any, **kwargs: Any) -> Any:
        time.sleep(PAUSE)
        return function(*args, **kwargs)

    return slow


def on_terminal(monkeypatch, *args: str) -> tuple[str, str, float]:
    """Run the CLI with stderr a terminal and bars due at once; (its output in one line, what the bars drew, the
    wall time measured around it)."""
    terminal = io.StringIO()
    monkeypatch.setattr(report, "stderr_console", lambda: Console(file=terminal, force_terminal=True, width=200))
    monkeypatch.setattr(report, "PROGRESS_DELAY_SECONDS", 0.0)
    began = time.perf_counter()
    result = CliRunner().invoke(app, list(args))
    wall = time.perf_counter() - began
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split()), terminal.getvalue(), wall


def printed_seconds(output: str) -> float:
    """The time of the command's closing line: 'in 12.3 s' (the last one printed)."""
    found = re.findall(r"\bin (\d+\.\d) s\b", output)
    assert found, output
    return float(found[-1])


def assert_wall_time(output: str, wall: float, pauses: int) -> None:
    """The printed time covers every pause (so every phase) and is no more than the wall clock around the command
    (0.05 s for its rounding to tenths)."""
    assert pauses * PAUSE <= printed_seconds(output) <= wall + 0.05, (output, wall)


@pytest.mark.slow
def test_run_times_measuring_figures_and_report_and_prints_their_sum_as_its_time(tmp_path, monkeypatch):
    monkeypatch.setattr(figures, "plot_results", paused(figures.plot_results))
    monkeypatch.setattr(html, "write_report", paused(html.write_report))
    spec = light(tmp_path)
    output, bars, wall = on_terminal(monkeypatch, "run", str(spec), "--out", str(tmp_path), "--plot", "--html")
    assert_wall_time(output, wall, pauses=2)
    split = re.search(r"in (\S+) s \(measuring (\S+) s, figures (\S+) s, report (\S+) s\)", output)
    assert split, output
    total, measuring, drawing, writing = map(float, split.groups())
    assert drawing >= PAUSE and writing >= PAUSE and measuring + drawing + writing <= total + 0.15
    folder = tmp_path / "dog_bites_man"
    for label in ("running dog_bites_man", f"drawing the figures into {folder}/figures/",
                  f"writing {folder}/report.html"):  # fmt: skip
        assert label in bars, label


def test_check_draws_each_spec_and_closes_with_its_wall_time(monkeypatch):
    monkeypatch.setattr(checking, "check_spec", paused(checking.check_spec))
    monkeypatch.chdir(ROOT)  # committed baselines are only read: check without --update writes nothing
    output, bars, wall = on_terminal(monkeypatch, "check", "experiments/dog_bites_man.yaml")
    assert "checked 1 spec(s) in" in output
    assert_wall_time(output, wall, pauses=1)
    assert "checking experiments/dog_bites_man.yaml" in bars


@pytest.mark.parametrize(
    ("command", "module", "name", "label"),
    [
        ("plot", figures, "plot_results", "drawing the figures of"),
        ("report", html, "write_report", "writing"),
        ("properties", properties, "measure_properties", "measuring the properties of 2 encoding(s) at N=8"),
        ("trace", trace, "trace_and_write", "tracing layer 1 of"),
        ("compare", comparing, "compare", "comparing encodings"),
    ],
)
@pytest.mark.slow
def test_each_command_draws_its_phase_and_prints_its_wall_time(tmp_path, monkeypatch, command, module, name, label):
    monkeypatch.setattr(module, name, paused(getattr(module, name)))
    shutil.copytree(ROOT / "results/zoo_causal", tmp_path / "run", ignore=shutil.ignore_patterns("figures"))
    arguments = {
        "plot": [str(tmp_path / "run")],
        "report": [str(tmp_path / "run"), "--out", str(tmp_path / "report.html")],
        "properties": ["-e", "none,rope", "--max-len", "8", "--out", str(tmp_path)],
        "trace": [str(light(tmp_path)), "--out", str(tmp_path)],
        "compare": [str(light(tmp_path)), "-e", "none", "--out", str(tmp_path)],
    }[command]
    output, bars, wall = on_terminal(monkeypatch, command, *arguments)
    assert_wall_time(output, wall, pauses=1)
    assert label in bars


TRAINED = """\
name: tiny_trained
model: {d_model: 16, n_heads: 2, n_layers: 1, dtype: float64}
encodings: [none, sinusoidal]
inputs: [{sentence: word1 word2 word3, permutations: all}]
metrics: [equivariance]
train: {task: first_word, train_lengths: [3, 4], test_lengths: [3, 4], vocabulary: 8, steps: 2, batch: 4}
"""


def notes_of(spec_text: str, write_spec) -> list[str]:
    """What a run's bar would say, in order (losses blanked), through the production sweep."""
    said: list[str] = []
    run_sweep(load_spec(write_spec(spec_text)).spec, RunOptions(notes=said.append))
    return [re.sub(r"loss \S+", "loss L", note) for note in said]


def test_a_trained_run_says_each_training_step_then_what_it_measures(write_spec):
    training = [f"training {name}: step {step}/2, loss L" for name in ("none", "sinusoidal") for step in (1, 2)]
    assert notes_of(TRAINED, write_spec) == [*training, "measuring", "building the stacks", "measuring"]


@pytest.mark.skipif(not installed("transformers"), reason="needs the optional extra: orderlab[hf]")
def test_a_zoo_run_says_it_loads_each_model_of_its_sweep(write_spec):
    families = ("bert", "deberta")
    spec = (
        "name: zoo\nmodel: {kind: hf, family: [bert, deberta], d_model: 16, n_heads: 2, n_layers: 1}\n"
        "inputs: [{sentence: dog bites man}]\nmetrics: [equivariance]\n"
    )
    expected = [(f"loading the hf model (family={family})", f"measuring (family={family})") for family in families]
    assert notes_of(spec, write_spec) == [note for pair in expected for note in pair]
