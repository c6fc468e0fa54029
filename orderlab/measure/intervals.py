"""Statistics over seeds: the mean of a figure over a seed sweep and its percentile-bootstrap 95% interval.

A seed sweep (`seed: [0, 1, 2]`) measures the same stack drawn (and trained) anew per seed; a wide table with
one row per seed and cell (summary.csv's worst values, compare's cells) becomes one row per cell with, per
encoding, the mean over seeds, its interval and the worst verdict of any seed. The resampling is seeded with
a fixed seed, so the same values always give the same bytes, whatever run, cell or machine they come from.
Plain data in, plain data out: rendering is report/terminal.py's.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pandas as pd

from orderlab.measure.verdicts import NON_FINITE, ORDER_SENSITIVE

RESAMPLES = 10_000
RESAMPLING_SEED = 20_240_514  # fixed: the interval is a function of the values alone
LEVEL = 0.95
BLOCK_ELEMENTS = 1 << 22  # resampled values held at once (32 MB of float64), so memory stays flat for big tables
# Columns beside each encoding's mean: '<encoding> lower' and '<encoding> upper'.
LOWER, UPPER = "lower", "upper"
VERDICT_RANK = {NON_FINITE: 2, ORDER_SENSITIVE: 1}  # the worst verdict of any seed is the cell's


def bootstrap_interval(samples: npt.ArrayLike) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Per row of `samples` (cells x seeds): the percentile-bootstrap LEVEL interval of the row's mean, from
    RESAMPLES resamples of its seeds with replacement (the same resampling indices for every row). A row with a
    NaN gets a NaN interval; a single seed gives the interval [value, value]."""
    values = np.atleast_2d(np.asarray(samples, dtype=np.float64))
    cells, seeds = values.shape
    picks = np.random.default_rng(RESAMPLING_SEED).integers(0, seeds, size=(RESAMPLES, seeds))
    tail = 100 * (1 - LEVEL) / 2
    lower, upper = np.empty(cells), np.empty(cells)
    block = max(1, BLOCK_ELEMENTS // (RESAMPLES * seeds))
    for start in range(0, cells, block):
        means = values[start : start + block][:, picks].mean(axis=-1)  # (block, RESAMPLES)
        lower[start : start + block], upper[start : start + block] = np.percentile(means, [tail, 100 - tail], axis=-1)
    return lower, upper


def over_seeds(wide: pd.DataFrame, seed: str, encodings: list[str]) -> pd.DataFrame:
    """One row per cell (every column but `seed` and the encodings' own), in first-seen order: per encoding the
    mean over seeds, '<encoding> lower' / '<encoding> upper' (bootstrap interval) and the worst verdict."""
    own = {*encodings, *(f"{name} verdict" for name in encodings)}
    keys = [column for column in wide.columns if column != seed and column not in own]
    cell = wide.groupby(keys, sort=False, dropna=False).ngroup().to_numpy()
    counts = np.bincount(cell)
    seeds = int(counts[0])
    assert (counts == seeds).all(), "every cell of a seed sweep is measured under every seed"
    order = np.argsort(cell, kind="stable")  # each cell's rows together, its seeds in their order
    table = wide.iloc[order[::seeds]][keys].reset_index(drop=True)
    means: dict[str, npt.NDArray[np.float64]] = {}
    bounds: dict[str, npt.NDArray[np.float64]] = {}
    verdicts: dict[str, list[object]] = {}
    for name in encodings:
        samples = wide[name].to_numpy(dtype=np.float64)[order].reshape(-1, seeds)
        means[name] = samples.mean(axis=1)
        bounds[f"{name} {LOWER}"], bounds[f"{name} {UPPER}"] = bootstrap_interval(samples)
        marks = wide[f"{name} verdict"].to_numpy(dtype=object)[order].reshape(-1, seeds)
        verdicts[f"{name} verdict"] = [max(row, key=lambda mark: VERDICT_RANK.get(mark, 0)) for row in marks]
    ordered = {f"{name} {side}": bounds[f"{name} {side}"] for side in (LOWER, UPPER) for name in encodings}
    return pd.concat([table, pd.DataFrame(means | ordered | verdicts)], axis=1)
