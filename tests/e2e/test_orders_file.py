"""orders.csv through the CLI: every reordering metrics.csv measures, once, with its displacement; `check` compares
it where a baseline has one and does not ask for it where an older baseline has none."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from orderlab.cli import app

runner = CliRunner()
SPEC = """\
name: shuffled
seed: 3
model: {d_model: 8, n_heads: 2, n_layers: 1, dtype: float64}
encodings: [none, sinusoidal]
inputs:
  - sentence: the dog bites the man
    permutations: {local: 2}
  - sentence: a b c d e
    permutations: {ngram: 2, random: 100, distinct: up_to}
metrics: [invariance]
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The spec and its baseline, made once by `check --update`."""
    root = tmp_path_factory.mktemp("orders")
    (root / "experiments").mkdir()
    (root / "experiments" / "shuffled.yaml").write_text(SPEC)
    result = runner.invoke(app, ["check", "--update", str(root / "experiments"), "--out", str(root / "results")])
    assert result.exit_code == 0, result.output
    return root


def check(root: Path):
    return runner.invoke(app, ["check", str(root / "experiments"), "--out", str(root / "results")])


def test_orders_lists_each_measured_reordering_once_with_its_displacement(project: Path):
    folder = project / "results" / "shuffled"
    metrics = pd.read_csv(folder / "metrics.csv", dtype=str, keep_default_na=False)
    orders = pd.read_csv(folder / "orders.csv", dtype={"permutation": str})
    measured = metrics[metrics["case"] == "permutation"][["input", "permutation"]].drop_duplicates()
    assert sorted(map(tuple, measured.to_numpy())) == sorted(map(tuple, orders[["input", "permutation"]].to_numpy()))
    # {local: 2} on 5 words: windows (0 1) (2 3) (4), and "the" twice in other windows: 2 x 2 - 1 = 3 orders
    assert set(orders[orders["input"] == "the dog bites the man"]["permutation"]) == {"1 0 2 3 4", "0 1 3 2 4",
                                                                                      "1 0 3 2 4"}  # fmt: skip
    # {ngram: 2} on 5 words: units (0 1) (2 3) (4), 3! - 1 = 5 orders, fewer than the 100 asked (up_to)
    assert (orders["input"] == "a b c d e").sum() == 5
    # by hand: (4 2 3 0 1) moves 4+1+1+3+3 = 12 slots over 5 words; flips 4 pairs with slot 4, 2 with 2, 2 with 3;
    # IDC 2.4 / 5
    row = orders[orders["permutation"] == "4 2 3 0 1"].iloc[0]
    assert (row["permuted"], row["words"]) == ("e c d a b", 5)
    assert (row["mean_abs_displacement"], row["kendall_tau_distance"]) == (pytest.approx(2.4), 8)
    assert row["index_displacement_count"] == pytest.approx(0.48)


def test_check_compares_orders_where_the_baseline_has_it(project: Path, tmp_path: Path):
    root = tmp_path / "copy"
    shutil.copytree(project, root)
    assert check(root).exit_code == 0
    orders = root / "results" / "shuffled" / "orders.csv"
    orders.write_text(orders.read_text().replace(",8,4.8", ",9,4.8"))  # one Kendall distance edited
    result = check(root)
    assert result.exit_code == 1, result.output
    assert "orders.csv" in result.output


def test_a_baseline_from_before_orders_csv_still_passes(project: Path, tmp_path: Path):
    root = tmp_path / "copy"
    shutil.copytree(project, root)
    (root / "results" / "shuffled" / "orders.csv").unlink()
    result = check(root)
    assert result.exit_code == 0, result.output
    assert "orders.csv" not in result.output
