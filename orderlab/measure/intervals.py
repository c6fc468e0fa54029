"""Statistics over seeds: the mean of a figure over a seed sweep and its Student's t 95% interval.

A seed sweep (`seed: [0, 1, 2]`) measures the same stack drawn (and trained) anew per seed; a wide table with
one row per seed and cell (summary.csv's worst values, compare's cells) becomes one row per cell with, per
encoding, the mean over seeds, its interval and the worst verdict of any seed.

The interval is mean +- t(0.975, n - 1) * s / sqrt(n), s the sample standard deviation of the n seeds' values.
It covers the true mean (the mean over all seeds one could draw) 95% of the time when the per-seed values are
independent and roughly normal; it is exact for normal values at any n >= 2, where a percentile bootstrap of
3-5 seeds covers far less than it says. One seed has no interval (no spread to measure), nor has a cell with
a non-finite value: both bounds are missing (pd.NA, written as blank cells), and the mean stands alone.
Plain data in, plain data out: rendering is report/terminal.py's.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from orderlab.metrics import RATE_COUNT, RATE_TIES
from orderlab.vocabulary.columns import LOWER, UPPER, condition_column, detail_number, earliest, first_layer_column
from orderlab.vocabulary.verdict_words import NON_FINITE, ORDER_SENSITIVE, UNRESOLVED

LEVEL = 0.95
# Columns beside each encoding's mean: '<encoding> lower' and '<encoding> upper'.
VERDICT_RANK = {NON_FINITE: 3, ORDER_SENSITIVE: 2, UNRESOLVED: 1}  # the worst verdict of any seed is the cell's

# Student's t quantile t(0.975, df) for df = 1..30, to 6 decimals (tests/unit/measure/test_seeds.py checks them
# against the t density); past 30, the Cornish-Fisher expansion about the normal quantile Z_975 is closer than 1e-6.
T_975 = (
    12.706205, 4.302653, 3.182446, 2.776445, 2.570582, 2.446912, 2.364624, 2.306004, 2.262157, 2.228139,
    2.200985, 2.178813, 2.160369, 2.144787, 2.131450, 2.119905, 2.109816, 2.100922, 2.093024, 2.085963,
    2.079614, 2.073873, 2.068658, 2.063899, 2.059539, 2.055529, 2.051831, 2.048407, 2.045230, 2.042272,
)  # fmt: skip
Z_975 = 1.959963984540054


def t_quantile(df: int) -> float:
    """t(0.975, df): the half-width of a 95% interval in standard errors, for df >= 1 degrees of freedom."""
    if df < 1:
        raise ValueError(f"degrees of freedom {df}; expected at least 1")
    if df <= len(T_975):
        return T_975[df - 1]
    z = Z_975
    terms = (
        (z**3 + z) / 4,
        (5 * z**5 + 16 * z**3 + 3 * z) / 96,
        (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384,
        (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160,
    )
    return float(z + sum(term / df**power for power, term in enumerate(terms, start=1)))


def t_interval(samples: npt.ArrayLike) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Per row of `samples` (cells x seeds): the Student's t LEVEL interval of the row's mean. NaN bounds where
    there is none: a single seed, or a row with a non-finite value."""
    values = np.atleast_2d(np.asarray(samples, dtype=np.float64))
    seeds = values.shape[1]
    if seeds < 2:
        missing = np.full(values.shape[0], np.nan)
        return missing, missing.copy()
    finite = np.asarray(np.isfinite(values).all(axis=1), dtype=bool)
    kept = np.where(finite[:, None], values, 0.0)  # a row with NaN or inf gets no interval; zeros keep numpy quiet
    mean = kept.mean(axis=1)
    half = t_quantile(seeds - 1) * kept.std(axis=1, ddof=1) / math.sqrt(seeds)
    return np.where(finite, mean - half, np.nan), np.where(finite, mean + half, np.nan)


def _mean_of_numbers(row: npt.NDArray[Any]) -> object:
    """The mean of a per-seed figure written as metrics.csv writes its detail floats, or the blank it shares a
    column with."""
    numbers = pd.to_numeric(pd.Series(row), errors="coerce")
    return row[0] if numbers.isna().any() else detail_number(float(numbers.mean()))


def over_seeds(wide: pd.DataFrame, seed: str, encodings: list[str], per_seed: tuple[str, ...] = ()) -> pd.DataFrame:
    """One row per cell (every column but `seed`, the encodings' own and the `per_seed` ones), in first-seen order:
    per encoding the mean over seeds, '<encoding> lower' / '<encoding> upper' (t interval; missing, pd.NA, without
    one: one seed) and the worst verdict. A `per_seed` column is a figure each seed draws anew (next_token's chance
    level follows the seed's grammar): the mean over seeds where it is a number, its one value where blank."""
    firsts = [first_layer_column(name) for name in encodings if first_layer_column(name) in wide.columns]
    averaged = [column for column in per_seed if column in wide.columns]
    own = {*encodings, *(f"{name} verdict" for name in encodings), *firsts, *averaged}
    shown = [column for column in wide.columns if column != seed and column not in own]
    # A rate's decided answers and its ties differ by seed (a margin within round-off under one seed's weights only).
    # So do a condition's own (summaries.counts_by_condition), where the conditions' differ.
    counted: dict[str, Callable[..., npt.NDArray[np.float64]]] = {RATE_COUNT: np.fmax.reduce, RATE_TIES: np.nansum}
    for name in encodings:
        counted |= {condition_column(name, RATE_COUNT): np.fmax.reduce, condition_column(name, RATE_TIES): np.nansum}
    keys = [column for column in shown if column not in counted]
    cell = wide.groupby(keys, sort=False, dropna=False).ngroup().to_numpy()
    order = np.argsort(cell, kind="stable")  # each cell's rows together, its seeds in their order
    # A cell may hold fewer seeds than the sweep: a metric whose rows follow each seed's draws (prefix_invariance, on
    # the drawn orders that keep the last word) exists under some seeds only. Its figures are over the seeds it has.
    cells = np.split(order, np.flatnonzero(np.diff(cell[order])) + 1)
    table = wide.iloc[[rows[0] for rows in cells]][shown].reset_index(drop=True)

    def per_cell(column: str, dtype: Any = object) -> list[npt.NDArray[Any]]:
        values = wide[column].to_numpy(dtype=dtype)
        return [values[rows] for rows in cells]

    for column, reduce in counted.items():  # the most answers a seed decided; the ties of all seeds
        if column in table.columns:
            answers = per_cell(column, np.float64)
            table[column] = pd.Series([np.nan if np.isnan(row).all() else reduce(row) for row in answers]).astype(
                "Int64"
            )
    means: dict[str, npt.NDArray[np.float64]] = {}
    bounds: dict[str, pd.arrays.FloatingArray] = {}
    verdicts: dict[str, list[object]] = {}
    for name in encodings:
        samples = per_cell(name, np.float64)
        means[name] = np.array([row.mean() for row in samples])
        intervals = [t_interval(row[None, :]) for row in samples]
        for side, index in ((LOWER, 0), (UPPER, 1)):  # NaN -> pd.NA: no interval, not a number
            bounds[f"{name} {side}"] = pd.array([bound[index][0] for bound in intervals], dtype="Float64")
        marks = per_cell(f"{name} verdict")
        verdicts[f"{name} verdict"] = [max(row, key=lambda mark: VERDICT_RANK.get(mark, 0)) for row in marks]
    for column in firsts:  # the earliest layer at which any seed shows order
        verdicts[column] = [earliest([str(layer) for layer in row]) for row in per_cell(column)]
    for column in averaged:
        verdicts[column] = [_mean_of_numbers(row) for row in per_cell(column)]
    ordered = {f"{name} {side}": bounds[f"{name} {side}"] for side in (LOWER, UPPER) for name in encodings}
    merged = pd.concat([table, pd.DataFrame(means | ordered | verdicts)], axis=1)
    leading = [column for column in wide.columns if column in shown or column in averaged]  # a key's place kept
    return merged[leading + [column for column in merged.columns if column not in leading]]
