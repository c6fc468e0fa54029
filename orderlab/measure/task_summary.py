"""The literature's metrics of a classifier under shuffling (metrics/task_predictions.py): per example from its
answers, then summary.csv's means over examples with seeded percentile-bootstrap intervals (resampling examples),
overall, per gold label, per group and unweighted over groups (lm-evaluation-harness's mean of group scores).

A tied answer (task_heads.Answers.tied) is neither right nor wrong, and a non-finite one is no answer: an example
whose original is either has no value for the metrics that need the original's answer, and such shuffles are left
out of every share. Pure numpy and pandas.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

from orderlab.measure.task_heads import Answers
from orderlab.metrics.task_predictions import (
    ACCURACY_ORIGINAL,
    CORRECT_SURVIVING,
    FLIP_RATE,
    OMEGA_MAX,
    P_C,
    P_F,
    PER_EXAMPLE,
)

Floats = npt.NDArray[np.float64]
LEVEL = 0.95
ALL, BY_LABEL, BY_GROUP, GROUPS_MEAN = "all", "label", "group", "groups_mean"  # summary.csv's `by` column
SUMMARY_COLUMNS = ["encoding", "metric", "by", "key", "value", "lower", "upper", "examples", "ties"]


def per_example(answers: Answers, gold: int | None) -> dict[str, float]:
    """Each published metric's value on one example; row 0 of `answers` is the original, the rest its shuffles.
    NaN where the metric does not apply (no gold label, the original's answer a tie, no decided shuffle, or an
    original right where the metric asks about wrong ones, and the reverse)."""
    nan = float("nan")
    original, shuffled = int(answers.predicted[0]), answers.predicted[1:]
    decided = answers.decided[1:]
    known = bool(answers.decided[0])
    values = dict.fromkeys(PER_EXAMPLE, nan)
    if known and decided.any():
        values[FLIP_RATE] = float(np.mean(shuffled[decided] != original))
    if gold is None:
        return values
    right = shuffled[decided] == gold
    if decided.any():
        values[OMEGA_MAX] = float(right.any())
    if not known:
        return values
    correct = original == gold
    values[ACCURACY_ORIGINAL] = float(correct)
    if decided.any():
        values[P_C if correct else P_F] = float(right.mean())
        if correct:
            values[CORRECT_SURVIVING] = float(right.all())
    return values


@dataclass(frozen=True)
class Scope:
    """Which examples a summary row is over: all of them, those of one gold label, or of one group."""

    by: str
    key: str
    members: npt.NDArray[np.int64]


def scopes(labels: Sequence[str | None], groups: Sequence[str | None]) -> list[Scope]:
    """All examples, then each gold label's, then each group's, in first-seen order."""
    found = [Scope(ALL, "", np.arange(len(labels)))]
    for by, keys in ((BY_LABEL, labels), (BY_GROUP, groups)):
        for key in dict.fromkeys(k for k in keys if k is not None):
            found.append(Scope(by, key, np.flatnonzero(np.array([k == key for k in keys]))))
    return found


def resampled_means(values: Floats, resamples: int, rng: np.random.Generator) -> Floats:
    """The mean of the finite values in each of `resamples` resamples (with replacement) of the examples; NaN for a
    resample without one."""
    finite = np.isfinite(values)
    indices = rng.integers(0, len(values), size=(resamples, len(values)))
    sums, counts = np.where(finite, values, 0.0)[indices].sum(axis=1), finite[indices].sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def interval(samples: Floats) -> tuple[float, float]:
    """The percentile interval at LEVEL of bootstrap means; NaN without any."""
    samples = samples[np.isfinite(samples)]
    if not len(samples):
        return float("nan"), float("nan")
    low, high = np.percentile(samples, [100 * (1 - LEVEL) / 2, 100 * (1 + LEVEL) / 2])
    return float(low), float(high)


def summary_rows(
    encoding: str, values: pd.DataFrame, scoped: list[Scope], tied: Floats, resamples: int, seed: int
) -> pd.DataFrame:
    """summary.csv's rows of one condition. values: one column per metric, one row per example; tied: each example's
    count of tied answers. Each scope's resamples are drawn from a generator seeded by `seed`, in row order."""
    rows = []
    groups = [scope for scope in scoped if scope.by == BY_GROUP]
    for metric in PER_EXAMPLE:
        column = values[metric].to_numpy(dtype=np.float64)
        rng = np.random.default_rng(seed)
        for scope in scoped:
            chosen = column[scope.members]
            finite = np.isfinite(chosen)
            value = float(chosen[finite].mean()) if finite.any() else float("nan")
            low, high = interval(resampled_means(chosen, resamples, rng)) if resamples else (np.nan, np.nan)
            rows.append([encoding, metric, scope.by, scope.key, value, low, high, int(finite.sum()),
                         int(tied[scope.members].sum())])  # fmt: skip
        if groups:
            means = [column[g.members][np.isfinite(column[g.members])] for g in groups]
            value = float(np.mean([m.mean() for m in means if len(m)])) if any(len(m) for m in means) else np.nan
            draws = [resampled_means(column[g.members], resamples, rng) for g in groups] if resamples else []
            with warnings.catch_warnings():  # a resample where no group has a value: NaN, said once by `interval`
                warnings.simplefilter("ignore", RuntimeWarning)
                low, high = interval(np.nanmean(np.vstack(draws), axis=0)) if draws else (np.nan, np.nan)
            rows.append([encoding, metric, GROUPS_MEAN, "", value, low, high, sum(len(m) for m in means),
                         int(sum(tied[g.members].sum() for g in groups))])  # fmt: skip
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
