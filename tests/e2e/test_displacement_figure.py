"""The figure of metric versus displacement (report/figures.metric_by_displacement), from a run's metrics.csv and
orders.csv as `orderlab run` writes them: what it draws, read off the figure; and orders.csv read as hostile input."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from orderlab.cli import app
from orderlab.core.userfiles import FileProblem
from orderlab.report import figures

runner = CliRunner()
SPEC = """\
name: moved
seed: 1
model: {d_model: 8, n_heads: 2, n_layers: 1, dtype: float64}
encodings: [none, sinusoidal]
inputs:
  - sentence: a b c d e f
    permutations: {local: 2}
  - sentence: a b c d e f
    permutations: {random: 20}
metrics: [invariance]
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("moved")
    (root / "moved.yaml").write_text(SPEC)
    result = runner.invoke(app, ["run", str(root / "moved.yaml"), "--out", str(root / "out"), "-q"])
    assert result.exit_code == 0, result.output
    return root / "out" / "moved"


def displacement_drawing(folder: Path) -> figures.Drawing | None:
    drawn = figures.drawings(folder, figures.read_results(folder))
    return next((d for d in drawn if d.stem == "metrics_by_displacement"), None)


def test_one_panel_per_metric_one_line_per_encoding_through_the_mean_at_each_displacement(folder: Path):
    drawing = displacement_drawing(folder)
    assert drawing is not None
    figure = drawing.figure
    figure.draw_without_rendering()  # ticks and labels as a saved file has them
    panels = [ax for ax in figure.axes if ax.get_visible()]
    assert [ax.get_title() for ax in panels] == [
        "invariance_mean (layer 1)", "invariance_max (layer 1)", "invariance_first (layer 1)",
        "invariance_last (layer 1)",
    ]  # fmt: skip
    ax = panels[0]
    assert ax.get_xlabel() == "mean displacement (slots per word)"
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert set(lines) == {"none", "sinusoidal"}
    # Without an encoding the mean-pooled vector ignores order: every reordering is at round-off, drawn at FLOOR.
    assert set(lines["none"].get_ydata()) == {figures.FLOOR}
    assert min(lines["sinusoidal"].get_ydata()) > 1e-6
    # x: the distinct displacements of the measured orders, local swaps (1/3 .. 1) among them
    xs = list(lines["sinusoidal"].get_xdata())
    assert xs == sorted(xs) and xs[0] == pytest.approx(1 / 3)  # one adjacent swap of 6 words moves 2 slots / 6
    labels = [tick.get_text() for tick in ax.get_yticklabels() if tick.get_text()]
    assert labels and not any("$" in label for label in labels)  # plain text, not mathtext source
    legend = figure.legends[0]
    assert [text.get_text() for text in legend.get_texts()] == ["none", "sinusoidal"]
    assert "how far the words moved" in legend.get_title().get_text().replace("\n", " ")


def test_no_displacement_figure_without_orders_csv(folder: Path, tmp_path: Path):
    old = tmp_path / "moved"
    shutil.copytree(folder, old)
    (old / "orders.csv").unlink()  # a run from before orders.csv
    assert displacement_drawing(old) is None


def test_a_damaged_orders_csv_is_one_line_naming_file_and_column(folder: Path, tmp_path: Path):
    damaged = tmp_path / "moved"
    shutil.copytree(folder, damaged)
    path = damaged / "orders.csv"
    lines = path.read_text().splitlines()
    cells = lines[1].split(",")
    cells[4] = "far"  # mean_abs_displacement
    path.write_text("\n".join([lines[0], ",".join(cells), *lines[2:]]) + "\n")
    with pytest.raises(FileProblem, match="mean_abs_displacement"):
        figures.read_results(damaged)
