"""Verdicts come from the round-off a run measures, so float32 and float64 agree wherever float32 can tell."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch
from hypothesis import given
from hypothesis import strategies as st
from precision import assert_precisions_agree, judged_run

from orderlab.cli import app
from orderlab.measure.noise import NoiseCollector
from orderlab.measure.verdicts import DEFAULT_RESOLUTION, FLOOR, canonical, noise_scale, round_off_lines, verdicts
from orderlab.vocabulary.verdict_words import NON_FINITE, ORDER_SENSITIVE, UNRESOLVED, eps

# Every stack feature that changes the round-off: depth, causal masks, repeated words, all encoding kinds.
STACKS = """
name: precision
seed: 3
model: {d_model: 32, n_heads: 4, n_layers: 3, causal: false}
encodings: [none, sinusoidal, rope, alibi, t5, learned, xpos, cope]
inputs:
  - sentence: the dog saw the cat
    permutations: all
probes:
  - [the dog saw the cat, the cat saw the dog]
metrics: [equivariance, invariance, attention, token_shift, pair_distance, repeated_words]
"""


def test_verdict_rule_on_any_values():
    @given(
        st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=20),
        st.floats(min_value=0, max_value=1e-3),
    )
    def check(values, noise):
        values = np.array(values)
        lines = round_off_lines(np.full(len(values), noise), "float32")
        judged = verdicts(np.array(["equivariance"] * len(values)), values, lines)
        finite = np.isfinite(values)
        assert (judged[~finite] == NON_FINITE).all()
        assert (judged[finite & (values > lines)] == ORDER_SENSITIVE).all()
        resolved = lines <= DEFAULT_RESOLUTION  # a wider line cannot call a value within it equivariant
        assert (judged[finite & (values <= lines) & resolved] == "equivariant").all()
        assert (judged[finite & (values <= lines) & ~resolved] == UNRESOLVED).all()
        written = canonical(values, judged)
        assert (written[judged == "equivariant"] == 0).all()
        kept = judged != "equivariant"
        assert np.array_equal(written[kept], values[kept], equal_nan=True)

    check()


def test_line_is_never_below_the_floor_and_nan_noise_is_no_line():
    lines = round_off_lines(np.array([0.0, 1e-30, math.nan, math.inf]), "float64")
    assert lines[0] == lines[1] == FLOOR * eps("float64")
    assert math.isnan(lines[2]) and math.isnan(lines[3])
    assert verdicts(np.array(["equivariance"]), np.array([0.0]), lines[2:3])[0] == NON_FINITE


def test_float64_line_is_the_float32_noise_scaled_by_the_epsilon_ratio():
    """A float64 run's twin computes in float32: their difference, scaled by eps64 / eps32, is float64's round-off;
    a float64 run whose model computes in float32 inside keeps it whole."""
    collector = NoiseCollector(noise_scale("float64", "float32"))
    collector.add("equivariance", 1, torch.tensor([1e-4], dtype=torch.float64))
    assert round_off_lines(np.array([collector.figures[(1, None, "equivariance")]]), "float64")[0] == (
        16 * 1e-4 * eps("float64") / eps("float32")
    )
    assert noise_scale("float32", "float32") == 1


def test_stack_verdicts_agree_in_float32_and_float64(tmp_path, monkeypatch):
    single = judged_run(STACKS, "float32", tmp_path, monkeypatch)
    double = judged_run(STACKS, "float64", tmp_path, monkeypatch)
    assert_precisions_agree(single, double)
    assert double.sensitive.any() and (~double.sensitive).any()  # both kinds of row are exercised


def test_causal_stack_verdicts_agree_in_float32_and_float64(tmp_path, monkeypatch):
    spec = STACKS.replace("causal: false", "causal: true").replace("permutations: all", "permutations: prefixes")
    spec = spec.replace("repeated_words]", "repeated_words, prefix_invariance]")
    single = judged_run(spec, "float32", tmp_path, monkeypatch)
    double = judged_run(spec, "float64", tmp_path, monkeypatch)
    assert_precisions_agree(single, double)


def test_round_off_is_written_as_zero_and_shown_as_zero(cli, tmp_path):
    spec = tmp_path / "precision.yaml"
    spec.write_text(STACKS)
    result = cli.invoke(app, ["run", str(spec), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    metrics = pd.read_csv(tmp_path / "precision" / "metrics.csv")
    passing = metrics.verdict != ORDER_SENSITIVE
    assert (metrics.value[passing] == 0).all() and (metrics.value[~passing] > 0).all()
    none = metrics[(metrics.encoding == "none") & metrics.metric.isin(["equivariance", "attention_equivariance"])]
    assert len(none) > 0 and (none.value == 0).all()
    assert "≈0 ✓" in result.output
