"""`orderlab compare` at 80 columns: one table that fits, never a table cut into parts that each repeat every row;
layers as whole numbers on screen and in compare.csv."""

from __future__ import annotations

import csv
import re

import pytest
from terminaltext import assert_nothing_cropped
from typer.testing import CliRunner

from orderlab.cli import app
from orderlab.encodings import ENCODINGS

ONE_SEED = """name: tiny
seed: 0
model: {d_model: 8, n_heads: 2, n_layers: 2}
inputs: [{sentence: the dog bit the man, permutations: reverse}]
"""
SEEDS = ONE_SEED.replace("seed: 0", "seed: [0, 1]")  # cells with intervals: too wide side by side at 80 columns


@pytest.mark.parametrize(
    ("text", "encodings", "stacked"),
    [(ONE_SEED, "sinusoidal,rope", False), (SEEDS, "sinusoidal,rope", True), (ONE_SEED, "all", True)],
    ids=["two-side-by-side", "two-over-seeds-stacked", "all-stacked"],
)
def test_compare_fits_80_columns_in_one_table_with_whole_layers(text, encodings, stacked, tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text(text)
    args = ["compare", "-e", encodings, str(spec), "-m", "equivariance", "--out", str(tmp_path / "out")]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert_nothing_cropped(result.output, 80)
    assert result.output.count("compare:") == 1
    assert sum("  equivariance" in line for line in result.output.splitlines()) == 1  # no table repeats the rows
    names = ENCODINGS.names() if encodings == "all" else encodings.split(",")
    header = next(line for line in result.output.splitlines() if "layer" in line)
    if stacked:  # too wide side by side: a row per encoding
        assert "condition" in header and all(f" {name} " in result.output for name in names)
    else:
        assert all(name in header for name in names)  # side by side in one header
    layers = [line.split("│")[2].strip() for line in result.output.splitlines() if line.count("│") > 3]
    assert {layer for layer in layers if layer} == {"0", "1", "2"}  # never '0.0'
    with open(tmp_path / "out" / "compare" / "compare.csv", newline="") as file:
        written = [row["layer"] for row in csv.DictReader(file)]
    assert written and all(re.fullmatch(r"\d+", layer) for layer in written), written[:3]  # never '0.000000e+00'
