"""Seed sweeps (issue 14): `seed: [0, 1, 2]` for any spec, the mean over seeds with a Student's t 95% interval in
summary.csv and the terminal table, and `compare` of seed-swept and trained specs."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from command_line import invoke
from hypothesis import given, settings
from hypothesis import strategies as st

from orderlab.measure.intervals import Z_975, over_seeds, t_interval, t_quantile
from orderlab.measure.sweep_measure import run_sweep
from orderlab.spec.load import load_spec
from orderlab.train.tasks import TaskData

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


def spec_file(tmp_path: Path, text: str, seeds: str, name: str = "spec.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text.replace("SEEDS", seeds))
    return path


# --- the t interval -----------------------------------------------------------------------------------------------

seed_values = st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=2, max_size=8)


def t_density_mass(upper: float, df: int, points: int = 200_001) -> float:
    """The Student's t density of `df` degrees of freedom integrated over [0, upper] (trapezoid on a fine grid)."""
    x = np.linspace(0.0, upper, points)
    log_scale = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    density = np.exp(log_scale - (df + 1) / 2 * np.log1p(x**2 / df))
    return float(np.trapezoid(density, x))


@pytest.mark.parametrize("df", [*range(1, 31), 31, 45, 100, 1000])
def test_the_t_quantile_leaves_two_and_a_half_percent_in_each_tail(df):
    assert t_density_mass(t_quantile(df), df) == pytest.approx(0.475, abs=2e-6)


def test_the_t_quantile_falls_towards_the_normal_one():
    quantiles = [t_quantile(df) for df in range(1, 500)]
    assert all(a > b for a, b in itertools.pairwise(quantiles)) and quantiles[-1] > Z_975


@pytest.mark.parametrize("seeds", [2, 3, 4, 5, 10])
def test_the_t_interval_covers_the_true_mean_95_percent_of_the_time_for_normal_values(seeds):
    """The stated coverage, by simulation: 40,000 samples of `seeds` normal values (fixed generator)."""
    trials, mean = 40_000, 1.3
    samples = np.random.default_rng(seeds).normal(mean, 0.7, size=(trials, seeds))
    lower, upper = t_interval(samples)
    covered = float(((lower <= mean) & (mean <= upper)).mean())
    assert covered == pytest.approx(0.95, abs=0.005)  # binomial standard error 0.0011


def test_a_percentile_bootstrap_of_three_seeds_covers_far_less_than_95_percent():
    """Why not the bootstrap: resampling 3 values cannot reach past their range, which misses the mean often."""
    samples = np.random.default_rng(0).normal(0.0, 1.0, size=(20_000, 3))
    bootstrap_coverage = float(((samples.min(axis=1) <= 0) & (samples.max(axis=1) >= 0)).mean())
    assert bootstrap_coverage < 0.8  # 1 - 2 / 2**3 = 0.75: any interval inside [min, max] covers at most this


@settings(max_examples=60, deadline=None)
@given(seed_values)
def test_the_interval_is_symmetric_about_the_mean(values):
    lower, upper = t_interval([values])
    mean, scale = np.mean(values), 1 + max(map(abs, values))
    assert lower[0] <= mean <= upper[0]
    assert upper[0] - mean == pytest.approx(mean - lower[0], abs=1e-9 * scale)


@settings(max_examples=60, deadline=None)
@given(seed_values, st.floats(0.0, 1.0))
def test_the_interval_shrinks_as_the_spread_shrinks(values, factor):
    mean = np.mean(values)
    narrower = [mean + factor * (value - mean) for value in values]
    (wide_low, wide_high), (low, high) = t_interval([values]), t_interval([narrower])
    assert high[0] - low[0] <= wide_high[0] - wide_low[0] + 1e-9 * (1 + max(map(abs, values)))


@settings(max_examples=30, deadline=None)
@given(st.lists(seed_values.filter(lambda v: len(v) == 3), min_size=2, max_size=4))
def test_the_interval_depends_on_the_values_alone(rows):
    together = t_interval(rows)
    alone = [t_interval([row]) for row in rows]
    for side in (0, 1):
        assert np.array_equal(together[side], [interval[side][0] for interval in alone])


def test_one_seed_or_a_nan_gives_no_interval():
    for samples in ([[0.25], [0.1]], [[0.1, float("nan"), 0.3]], [[0.1, float("inf"), 0.3]]):
        lower, upper = t_interval(samples)
        assert np.isnan(lower).all() and np.isnan(upper).all()


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
        "none verdict", "rope verdict", "none first layer", "rope first layer",
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
    assert "mean over seeds [95% t interval]" in " ".join(result.output.split())  # the caption, wrapped
    shown = summary.iloc[0]
    assert f"{shown.rope:.1e} [{shown['rope lower']:.1e}, {shown['rope upper']:.1e}] ✗" in result.output
    rerun = invoke("run", str(path), "--out", str(tmp_path / "again"))
    assert rerun.exit_code == 0, rerun.output
    assert (tmp_path / "again" / "seeded" / "summary.csv").read_bytes() == (folder / "summary.csv").read_bytes()


def test_a_sweep_of_one_seed_shows_the_mean_alone_and_writes_blank_bounds(tmp_path):
    result = invoke("run", str(spec_file(tmp_path, SEEDED, "[7]")), "--out", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    summary = pd.read_csv(tmp_path / "out" / "seeded" / "summary.csv", keep_default_na=False)
    assert set(summary["rope lower"]) == {""} and set(summary["rope upper"]) == {""}
    assert (summary["rope verdict"] == "order-sensitive").all()
    shown = f"{float(summary.rope.iloc[0]):.1e} ✗"
    assert shown in result.output and f"{shown[:-2]} [" not in result.output  # no zero-width "95%" interval
    assert "one seed: no interval" in " ".join(result.output.split()) and "95%" not in result.output


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


def test_a_seed_sweep_of_next_token_averages_each_seeds_own_chance_level(tmp_path):
    """next_token's chance level follows each seed's grammar, so it differs between seeds: it is a figure per seed
    (averaged over them), not a key that splits the task's row in two (an AssertionError before)."""
    text = TRAINED.replace("first_word", "next_token").replace("vocabulary: 4", "vocabulary: 16")
    text = text.replace("train_lengths: [3, 3]", "train_lengths: [3, 3], test_lengths: [3, 3]")
    text = text.replace("metrics: [equivariance]", "metrics: [equivariance, prefix_invariance]")
    text = text.replace("model: {", "model: {causal: true, ")
    result = invoke("run", str(spec_file(tmp_path, text, "[0, 1]")), "--out", str(tmp_path), "-q")
    assert result.exit_code == 0, result.output
    summary = pd.read_csv(tmp_path / "trained" / "summary.csv")
    task = summary[summary["case"] == "task"]
    train = load_spec(spec_file(tmp_path, text, "0", "one.yaml")).spec.train
    assert train is not None
    chances = [TaskData(train, seed).chance(3) for seed in (0, 1)]
    assert chances[0] != chances[1]  # the two grammars differ, or the test would not reach the bug
    assert len(task) == 1 and task["chance"].iloc[0] == pytest.approx(sum(chances) / 2)


def test_a_seed_swept_trained_run_can_be_run_again_into_its_folder(tmp_path):
    """Its checkpoints are named by their sweep cell (`seed=0_none.safetensors`): the manifest that lists them is
    read back, so the folder is recognised as the run's own (it was refused as 'not written by orderlab')."""
    spec = spec_file(tmp_path, TRAINED, "[0, 1]")
    for _ in range(2):
        result = invoke("run", str(spec), "--out", str(tmp_path), "-q")
        assert result.exit_code == 0, result.output


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
    one = pd.read_csv(tmp_path / "compare" / "compare.csv", keep_default_na=False).query("spec == 'single'")
    assert (one["rope lower"] == "").all() and (one["rope upper"] == "").all()  # one seed: no interval, blank
    assert "nan" not in (tmp_path / "compare" / "compare.csv").read_text()
    assert "mean over seeds [95% t interval]" in " ".join(result.output.split())


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


def test_a_cell_measured_under_some_seeds_only_is_summarised_over_the_seeds_it_has():
    """prefix_invariance writes rows only for drawn orders that keep the last word, so under a `random:` rule a cell
    may exist for one seed of two: it was an AssertionError; now its mean is over the seeds it has, with no interval
    from one seed, and the full cells keep theirs."""
    wide = pd.DataFrame({
        "case": ["permutation"] * 3, "subject": ["a b c"] * 3, "seed": [0, 1, 0],
        "metric": ["equivariance", "equivariance", "prefix_invariance"],
        "none": [0.25, 0.75, 0.5], "none verdict": ["order-sensitive", "invariant", "order-sensitive"],
    })  # fmt: skip
    table = over_seeds(wide, "seed", ["none"]).set_index("metric")
    assert table.loc["equivariance", "none"] == 0.5 and not pd.isna(table.loc["equivariance", "none upper"])
    assert table.loc["prefix_invariance", "none"] == 0.5 and pd.isna(table.loc["prefix_invariance", "none lower"])
    assert list(table["none verdict"]) == ["order-sensitive", "order-sensitive"]
