"""The literature's metrics of a classifier under shuffling (measure/task_summary.py), per example and over examples,
against hand computations, and the tie rule (measure/task_heads.py) that keeps round-off out of every share."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from orderlab.measure.task_heads import Answers, answers
from orderlab.measure.task_summary import (
    BY_GROUP,
    BY_LABEL,
    GROUPS_MEAN,
    per_example,
    resampled_means,
    scopes,
    summary_rows,
)
from orderlab.metrics.task_predictions import PER_EXAMPLE


def decided(*predicted: int, tied: tuple[bool, ...] = ()) -> Answers:
    """Answers whose row 0 is the original; ties where given."""
    count = len(predicted)
    ties = np.array(tied or (False,) * count)
    return Answers(np.array(predicted), np.ones(count), np.full(count, np.nan), ties, np.ones(count, dtype=bool))


def test_a_correct_original_gives_p_c_and_survival_a_wrong_one_p_f():
    right = per_example(decided(1, 1, 0, 1, 1), gold=1)  # original right; 3 of 4 shuffles right
    assert right["accuracy_original"] == 1 and right["omega_max"] == 1
    assert right["p_c"] == 0.75 and math.isnan(right["p_f"])
    assert right["correct_surviving"] == 0  # one shuffle turned it wrong
    assert right["flip_rate"] == 0.25
    wrong = per_example(decided(0, 2, 1, 0), gold=1)  # original wrong; 1 of 3 shuffles right
    assert wrong["accuracy_original"] == 0 and wrong["omega_max"] == 1
    assert wrong["p_f"] == 1 / 3 and math.isnan(wrong["p_c"]) and math.isnan(wrong["correct_surviving"])
    assert wrong["flip_rate"] == 2 / 3


def test_ties_are_neither_right_nor_wrong():
    # the original a tie: nothing that needs its answer; a tied shuffle: out of every share
    tied_original = per_example(decided(1, 1, 0, tied=(True, False, False)), gold=1)
    assert math.isnan(tied_original["accuracy_original"]) and math.isnan(tied_original["flip_rate"])
    assert tied_original["omega_max"] == 1
    tied_shuffle = per_example(decided(1, 0, 1, tied=(False, True, False)), gold=1)
    assert tied_shuffle["p_c"] == 1 and tied_shuffle["correct_surviving"] == 1 and tied_shuffle["flip_rate"] == 0


def test_non_finite_logits_are_no_answer():
    found = answers(np.array([[1.0, 0.0], [np.nan, 0.0], [0.0, 1.0]]), gold=0, round_off=0.0, dtype="float32")
    assert found.finite.tolist() == [True, False, True] and not found.tied[1]
    values = per_example(found, gold=0)
    assert values["p_c"] == 0 and values["flip_rate"] == 1  # over the one finite shuffle


def test_an_unlabelled_example_has_only_its_flip_rate():
    values = per_example(decided(0, 1, 0), gold=None)
    assert values["flip_rate"] == 0.5
    assert all(math.isnan(values[m]) for m in PER_EXAMPLE if m != "flip_rate")


def test_margins_within_round_off_are_ties():
    logits = np.array([[1.0, 1.0 + 1e-12, 0.0], [2.0, 0.5, 0.0]])
    found = answers(logits, gold=0, round_off=1e-9, dtype="float32")
    assert found.tied.tolist() == [True, False]
    assert found.predicted.tolist() == [1, 0]
    assert np.isclose(found.margin[1], 1.5)
    # softmax of [2, 0.5, 0] at the gold label 0: e^2 / (e^2 + e^0.5 + 1)
    assert np.isclose(found.gold_probability[1], math.exp(2) / (math.exp(2) + math.exp(0.5) + 1))


def test_summary_means_per_label_and_group_and_the_unweighted_mean_over_groups():
    values = pd.DataFrame({m: [np.nan] * 4 for m in PER_EXAMPLE})
    values["accuracy_original"] = [1.0, 0.0, 1.0, 1.0]
    scoped = scopes(["a", "b", "a", "a"], ["g1", "g1", "g1", "g2"])
    table = summary_rows("seeded", values, scoped, np.zeros(4), resamples=200, seed=0)
    rows = table[table["metric"] == "accuracy_original"].set_index(["by", "key"])
    assert rows.loc[("all", ""), "value"] == 0.75
    assert rows.loc[(BY_LABEL, "a"), "value"] == 1 and rows.loc[(BY_LABEL, "b"), "value"] == 0
    assert rows.loc[(BY_GROUP, "g1"), "value"] == 2 / 3 and rows.loc[(BY_GROUP, "g2"), "value"] == 1
    assert rows.loc[(GROUPS_MEAN, ""), "value"] == (2 / 3 + 1) / 2  # each group counts once, however many examples
    assert rows.loc[("all", ""), "lower"] <= 0.75 <= rows.loc[("all", ""), "upper"]
    again = summary_rows("seeded", values, scoped, np.zeros(4), resamples=200, seed=0)
    pd.testing.assert_frame_equal(table, again)  # seeded: the same intervals every run


@given(st.lists(st.sampled_from([0.0, 1.0, np.nan]), min_size=1, max_size=12), st.integers(0, 2**16))
def test_every_bootstrap_mean_lies_within_the_values(values: list[float], seed: int):
    column = np.array(values)
    means = resampled_means(column, 50, np.random.default_rng(seed))
    finite = means[np.isfinite(means)]
    assert ((finite >= 0) & (finite <= 1)).all()
    if not np.isfinite(column).any():
        assert not len(finite)
