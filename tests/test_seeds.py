"""Seed sweeps (issue 14): `seed: [0, 1, 2]` for any spec, the mean over seeds with a bootstrap 95% interval in
summary.csv and the terminal table, and `compare` of seed-swept and trained specs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from orderlab.cli import app
from orderlab.measure.intervals import bootstrap_interval
from orderlab.measure.sweep_run import run_sweep
from orderlab.spec.load import load_spec

SEEDED = """\
name: seeded
seed: SEEDS
model: {d_model: 8, n_heads: 2, n_layers: 1}
encodings: [none, rope]
inputs:
  - sentence: dog bites man
    permutations: all
probes:
  - [dog bites man, man bites dog]
metrics: [equivariance, pair_distance]
"""
TRAINED = """\
name: trained
seed: SEEDS
model: {d_model: 8, n_heads: 2, n_layers: 1}
encodings: [none, sinusoidal]
inputs:
  - sentence: word1 word2 word3
    permutations: all
metrics: [equivariance]
train: {task: first_word, train_lengths: [3, 3], vocabulary: 4, steps: 5, batch: 8}
"""


def invoke(*args: str):
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})


def spec_file(tmp_path: Path, text: str, seeds: str, name: str = "spec.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text.replace("SEEDS", seeds))
    return path


# --- the bootstrap ------------------------------------------------------------------------------------------------

seed_values = st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=1, max_size=8)


@settings(max_examples=60, deadline=None)
@given(seed_values)
def test_the_interval_contains_the_mean(values):
    lower, upper = bootstrap_interval([values])
    assert lower[0] <= np.mean(values) <= upper[0]


@settings(max_examples=60, deadline=None)
@given(seed_values, st.floats(0.0, 1.0))
def test_the_interval_shrinks_as_the_spread_shrinks(values, factor):
    mean = np.mean(values)
    narrower = [mean + factor * (value - mean) for value in values]
    (wide_low, wide_high), (low, high) = bootstrap_interval([values]), bootstrap_interval([narrower])
    assert high[0] - low[0] <= wide_high[0] - wide_low[0] + 1e-9 * (1 + max(map(abs, values)))


@settings(max_examples=30, deadline=None)
@given(st.lists(seed_values.filter(lambda v: len(v) == 3), min_size=2, max_size=4))
def test_the_interval_depends_on_the_values_alone(rows):
    together = bootstrap_interval(rows)
    alone = [bootstrap_interval([row]) for row in rows]
    for side in (0, 1):
        assert np.array_equal(together[side], [interval[side][0] for interval in alone])
    again = bootstrap_interval(rows)
    assert together[0].tobytes() == again[0].tobytes() and together[1].tobytes() == again[1].tobytes()


def test_one_seed_is_its_own_interval_and_a_nan_gives_no_interval():
    lower, upper = bootstrap_interval([[0.25], [0.1]])
    assert list(lower) == [0.25, 0.1] and list(upper) == [0.25, 0.1]
    assert np.isnan(bootstrap_interval([[0.1, float("nan"), 0.3]])).all()


# --- seed sweeps through the CLI ----------------------------------------------------------------------------------


def test_a_seed_sweep_writes_a_seed_column_and_the_mean_and_interval_over_seeds(tmp_path):
    path = spec_file(tmp_path, SEEDED, "[0, 1, 2]")
    result = invoke("run", str(path), "--out", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    folder = tmp_path / "out" / "seeded"
    metrics = pd.read_csv(folder / "metrics.csv")
    assert list(metrics.columns[:2]) == ["seed", "case"] and set(metrics.seed) == {0, 1, 2}
    summary = pd.read_csv(folder / "summary.csv")
    assert list(summary.columns) == [
        "case", "subject", "metric", "none", "rope", "none lower", "rope lower", "none upper", "rope upper",
        "none verdict", "rope verdict",
    ]  # fmt: skip
    worst = metrics.assign(subject=np.where(metrics.case == "probe", metrics.input + " vs " + metrics.permuted,
                                            metrics.input))  # fmt: skip
    per_seed = worst[worst.encoding == "rope"].groupby(["case", "subject", "metric", "seed"]).value.max()
    for _, row in summary.iterrows():
        seeds = per_seed.loc[(row.case, row.subject, row.metric)]
        assert len(seeds) == 3 and row.rope == pytest.approx(seeds.mean(), rel=1e-6)
        assert row["rope lower"] <= row.rope <= row["rope upper"] and row["rope lower"] < row["rope upper"]
        assert row["rope verdict"] == "order-sensitive"
        assert row["none"] == row["none lower"] == row["none upper"] == 0  # within round-off under every seed
    assert "mean over seeds [95% bootstrap interval]" in " ".join(result.output.split())  # the caption, wrapped
    shown = summary.iloc[0]
    assert f"{shown.rope:.1e} [{shown['rope lower']:.1e}, {shown['rope upper']:.1e}] ✗" in result.output
    rerun = invoke("run", str(path), "--out", str(tmp_path / "again"))
    assert rerun.exit_code == 0, rerun.output
    assert (tmp_path / "again" / "seeded" / "summary.csv").read_bytes() == (folder / "summary.csv").read_bytes()


def test_each_seed_of_a_sweep_is_the_run_of_that_seed(tmp_path):
    swept = run_sweep(load_spec(spec_file(tmp_path, SEEDED, "[0, 3]")).spec).metrics
    alone = run_sweep(load_spec(spec_file(tmp_path, SEEDED, "3", "alone.yaml")).spec).metrics
    three = swept[swept.seed == 3].drop(columns="seed").reset_index(drop=True)
    pd.testing.assert_frame_equal(three, alone)
    assert not swept[swept.seed == 0].value.reset_index(drop=True).equals(three.value)  # the seed changes the weights


def test_a_seed_sweep_trains_a_stack_per_seed(tmp_path):
    result = invoke("run", str(spec_file(tmp_path, TRAINED, "[0, 1]")), "--out", str(tmp_path), "-q")
    assert result.exit_code == 0, result.output
    folder = tmp_path / "trained"
    names = sorted(path.name for path in (folder / "checkpoints").iterdir())
    assert names == [f"seed={s}_{e}.safetensors" for s in (0, 1) for e in ("none", "sinusoidal")]
    first, second = ((folder / "checkpoints" / f"seed={s}_sinusoidal.safetensors").read_bytes() for s in (0, 1))
    assert first != second
    summary = pd.read_csv(folder / "summary.csv")
    assert list(summary.columns[:4]) == ["case", "subject", "weights", "metric"]
    assert set(summary.weights) == {"trained", "untrained"} and "sinusoidal upper" in summary.columns


def test_validate_plans_every_seed_and_refuses_a_repeated_one(tmp_path):
    result = invoke("validate", "--plan", str(spec_file(tmp_path, SEEDED, "[0, 1, 2]")))
    assert result.exit_code == 0, result.output
    assert all(f"seed={seed}" in result.output for seed in (0, 1, 2))
    repeated = invoke("validate", str(path := spec_file(tmp_path, SEEDED, "[4, 4]")))
    assert repeated.exit_code == 2
    expected = f"error: {path}:2: seed: 4 is listed twice; expected distinct values to sweep over"
    assert repeated.output.strip() == expected
    negative = invoke("validate", str(spec_file(tmp_path, SEEDED, "[1, -1]")))
    assert negative.exit_code == 2 and "seed[1]: got -1; expected greater than or equal to 0" in negative.output


# --- compare -----------------------------------------------------------------------------------------------------


def test_compare_of_a_seed_sweep_gives_the_mean_and_interval_over_seeds(tmp_path):
    swept = spec_file(tmp_path, SEEDED, "[0, 1, 2]")
    single = spec_file(tmp_path, SEEDED.replace("name: seeded", "name: single"), "0", "single.yaml")
    result = invoke("compare", "-e", "none,rope", "-m", "equivariance", str(swept), str(single), "--out", str(tmp_path))
    assert result.exit_code == 0, result.output
    table = pd.read_csv(tmp_path / "compare" / "compare.csv")
    assert list(table.columns) == [
        "spec", "case", "input", "metric", "layer", "none", "rope", "none lower", "rope lower", "none upper",
        "rope upper", "none verdict", "rope verdict",
    ]  # fmt: skip
    assert set(table.input) == {"dog bites man"}
    tidy = run_sweep(load_spec(swept).spec).metrics
    rope = tidy[(tidy.encoding == "rope") & (tidy.metric == "equivariance")]
    for layer, group in rope.groupby("layer"):
        row = table[(table.spec == "seeded") & (table.layer == layer)].iloc[0]
        assert row.rope == pytest.approx(group.groupby("seed").value.max().mean(), rel=1e-6)
        assert row["rope lower"] <= row.rope <= row["rope upper"]
    one = table[table.spec == "single"]
    assert (one.rope == one["rope lower"]).all() and (one.rope == one["rope upper"]).all()  # one seed: no spread
    assert "mean over seeds [95% bootstrap interval]" in " ".join(result.output.split())


def test_compare_of_a_trained_spec_keeps_trained_and_untrained_apart(tmp_path):
    path = spec_file(tmp_path, TRAINED, "0")
    result = invoke("compare", "-e", "none,sinusoidal", "-m", "equivariance", str(path), "--out", str(tmp_path))
    assert result.exit_code == 0, result.output
    table = pd.read_csv(tmp_path / "compare" / "compare.csv")
    assert set(table.input) == {"word1 word2 word3 [weights=trained]", "word1 word2 word3 [weights=untrained]"}
    tidy = run_sweep(load_spec(path).spec).metrics
    for weights, group in tidy[(tidy.encoding == "sinusoidal") & (tidy.metric == "equivariance")].groupby("weights"):
        row = table[(table.input == f"word1 word2 word3 [weights={weights}]") & (table.layer == 1)].iloc[0]
        assert row.sinusoidal == pytest.approx(group[group.layer == 1].value.max(), rel=1e-6)
    assert (table["none verdict"] == "equivariant").all()  # trained or not, no encoding keeps the symmetry
