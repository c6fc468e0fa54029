"""The answer in the terminal and in summary.csv: where order first shows, and a trained spec's task accuracy."""

from __future__ import annotations

import pandas as pd

from orderlab.cli import app
from orderlab.vocabulary.columns import earliest, first_layer_column

STACK = """name: answers
model: {d_model: 16, n_heads: 2, n_layers: 2, dtype: float64}
encodings: [none, sinusoidal, rope]
inputs: [{sentence: dog bites man, permutations: all}]
probes: [[dog bites man, man bites dog]]
metrics: [equivariance, pair_distance]
"""

TRAINED = """name: tiny_trained
model: {d_model: 16, n_heads: 2, n_layers: 1, dtype: float64}
encodings: [none, sinusoidal]
inputs: [{sentence: word1 word2 word3, permutations: all}]
metrics: [equivariance]
train: {task: first_word, train_lengths: [3, 4], test_lengths: [3, 5], vocabulary: 8, steps: 5, batch: 32}
"""


def test_the_summary_names_the_first_layer_where_order_shows(cli, write_spec, tmp_path):
    """No encoding: blank (no layer); sinusoidal adds position to the input, so layer 0; RoPE rotates q and k: 1."""
    result = cli.invoke(app, ["run", str(write_spec(STACK)), "--out", str(tmp_path)], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    summary = pd.read_csv(tmp_path / "answers" / "summary.csv", keep_default_na=False, dtype=str)
    equivariance = summary.set_index("metric").loc["equivariance"]
    firsts = [equivariance[first_layer_column(name)] for name in ("none", "sinusoidal", "rope")]
    assert firsts == ["", "0", "1"]
    rows = pd.read_csv(tmp_path / "answers" / "metrics.csv")
    for name in ("sinusoidal", "rope"):  # the first layer is the least layer of an order-sensitive row
        shown = rows[(rows.metric == "equivariance") & (rows.encoding == name) & (rows.verdict == "order-sensitive")]
        assert str(shown["layer"].min()) == equivariance[first_layer_column(name)]
    assert "-/0/1" in result.output
    assert "first layer: where order first shows" in " ".join(result.output.split())


def test_over_seeds_the_first_layer_is_the_earliest_any_seed_shows():
    assert earliest(["2", "1", ""]) == "1" and earliest(["", ""]) == ""


def test_a_trained_spec_prints_and_writes_its_task_accuracy_against_chance(cli, write_spec, tmp_path):
    result = cli.invoke(app, ["run", str(write_spec(TRAINED)), "--out", str(tmp_path)], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    folder = tmp_path / "tiny_trained"
    metrics = pd.read_csv(folder / "metrics.csv", keep_default_na=False)
    tasks = metrics[metrics["case"] == "task"]
    summary = pd.read_csv(folder / "summary.csv", keep_default_na=False)
    written = summary[summary["case"] == "task"]
    assert list(written["subject"]) == sorted(set(tasks["input"]), key=lambda s: int(s.split(" of ")[1].split()[0]))
    for _, row in written.iterrows():
        measured = tasks[tasks["input"] == row["subject"]].set_index("encoding")
        for name in ("none", "sinusoidal"):
            assert row[name] == measured.loc[name, "value"] and row[f"{name} verdict"] == measured.loc[name, "verdict"]
        assert float(row["chance"]) == float(measured["chance"].iloc[0])
    assert "task accuracy of the trained stacks, against chance" in result.output
    untrained = written[written["none verdict"] == "untrained length"].iloc[0]  # length 5: not trained on
    assert f"{untrained['none']:.2f}*" in result.output and f"{float(untrained['chance']):.2f}" in result.output
