"""orders.csv's dependency_displacement, written where a spec supplies an input's parse (CoNLL heads): the mean
change of the parse's arc lengths, by hand; blank for an input without a parse; absent from specs without one; the
same from merged shards; and a parse that is no tree is one line at validate."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from sharding import assert_same_files, merged, run_shards, run_whole
from typer.testing import CliRunner

from orderlab.cli import app

runner = CliRunner()
SPEC = """\
name: parsed
model: {d_model: 8, n_heads: 2, n_layers: 1, dtype: float64}
encodings: [none]
inputs:
  - sentence: dog bites man
    permutations: all
    parse: [2, 0, 2]
  - sentence: a b c
    permutations: reverse
metrics: [invariance]
"""


@pytest.mark.slow  # a whole run, two shards and their merge
def test_orders_give_the_dependency_displacement_of_parsed_inputs_also_from_shards(tmp_path: Path):
    (tmp_path / "parsed.yaml").write_text(SPEC)
    whole = run_whole(runner, tmp_path / "parsed.yaml", tmp_path / "whole")
    orders = pd.read_csv(whole / "orders.csv", dtype={"permutation": str}).set_index(["input", "permutation"])
    parsed = orders.loc["dog bites man", "dependency_displacement"]
    # arcs dog<-bites, man<-bites, both 1 long: the original and "man bites dog" keep both (0); every other order
    # stretches one of them to 2: (1 + 0) / 2
    assert parsed.to_dict() == {"0 1 2": 0.0, "0 2 1": 0.5, "1 0 2": 0.5, "1 2 0": 0.5, "2 0 1": 0.5, "2 1 0": 0.0}
    assert orders.loc["a b c", "dependency_displacement"].isna().all()  # no parse: blank
    shards = run_shards(runner, tmp_path / "parsed.yaml", 2, tmp_path / "shards")
    assert_same_files(merged(runner, shards, tmp_path / "merged"), whole)


def test_without_a_parse_orders_keep_their_columns(tmp_path: Path):
    (tmp_path / "plain.yaml").write_text(SPEC.replace("    parse: [2, 0, 2]\n", "").replace("parsed", "plain"))
    folder = run_whole(runner, tmp_path / "plain.yaml", tmp_path / "out")
    assert "dependency_displacement" not in pd.read_csv(folder / "orders.csv").columns


@pytest.mark.parametrize(
    ("parse", "message"),
    [("[2, 0]", "2 heads for 3 words"), ("[2, 3, 1]", "0 roots"), ("[2, 0, 5]", "a head outside 0..3")],
)
def test_a_parse_that_is_no_tree_is_one_line_naming_the_field(tmp_path: Path, parse: str, message: str):
    (tmp_path / "parsed.yaml").write_text(SPEC.replace("[2, 0, 2]", parse))
    result = runner.invoke(app, ["validate", str(tmp_path / "parsed.yaml")])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "inputs[0].parse" in result.output and message in result.output, result.output
