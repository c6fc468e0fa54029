"""The round-off each metric carries in a run, measured, and the verdicts that follow from it.

The reference pass f(X) is repeated in the twin's precision (float32 <-> float64; float32 for a 16-bit run) by a
twin model with the same weights and encoding; evaluating a metric between the two passes with the identity
permutation gives that metric's round-off at each layer and head, scaled to the precision the run computes
in (see orderlab/measure/verdicts.py for the rule). The same collectors that take a chunk's metrics take these
figures, so every metric is measured by the one code path that computes it. Never prints.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from orderlab.measure.verdicts import DEFAULT_RESOLUTION, canonical, round_off_lines, verdicts
from orderlab.metrics import METRICS
from orderlab.vocabulary.digest import NoiseKey
from orderlab.vocabulary.verdict_words import NON_FINITE, TIE

if TYPE_CHECKING:
    import torch  # for types only: `orderlab merge` judges a merged summary through `judge` without torch


class NoiseCollector:
    """RowCollector's `add` and `add_where`, keeping the largest figure per (layer, head, metric), each times
    `scale` (verdicts.noise_scale: the run-vs-twin difference as the run's own round-off)."""

    def __init__(self, scale: float = 1.0) -> None:
        self.figures: dict[NoiseKey, float] = {}
        self.scale = scale
        self.margin = math.nan  # a causal LM's log P(X) round-off (scaled): what a 0/1 answer's margin is judged by

    def mark_ties(self, tied: torch.Tensor | None) -> None:
        """Round-off has no ties: its identity comparison is a figure, not an answer."""

    def add(self, metric: str, layer: int, values: torch.Tensor, head: int | None = None) -> None:
        self.keep((layer, head, metric), (values.double() * self.scale).cpu().tolist())

    def add_where(self, keep: torch.Tensor, metric: str, layer: int, values: torch.Tensor) -> None:
        self.keep((layer, None, metric), (values[keep].double() * self.scale).cpu().tolist())

    def keep(self, key: NoiseKey, values: Iterable[float]) -> None:
        for value in values:
            known = self.figures.get(key, -math.inf)
            self.figures[key] = value if math.isnan(value) or value > known else known


def merge(*collectors: NoiseCollector) -> dict[NoiseKey, float]:
    """The largest figure of each key over several collectors (NaN wins): e.g. both sentences of a probe."""
    merged = NoiseCollector()
    for collector in collectors:
        for key, value in collector.figures.items():
            merged.keep(key, [value])
    return merged.figures


TIED = "tied"  # a collector's column (RowCollector): the row is a 0/1 answer whose margin lies within its round-off


def judge(table: pd.DataFrame, noise: dict[NoiseKey, float], dtype: str, resolution: float = DEFAULT_RESOLUTION) -> int:
    """Set each row's verdict from its measured round-off and zero the values within it; return the non-finite count.

    table: tidy rows with layer, head, metric and value columns, all measured under one noise map; a TIED column,
    where present, marks the ties (and is dropped). resolution: the widest line within which a value may pass.
    """
    heads = [None if pd.isna(head) else int(head) for head in table["head"]]
    keys = zip(table["layer"].astype(int), heads, table["metric"], strict=True)
    # A metric whose identity-permutation value is not round-off takes another's noise: the distance between two
    # occurrences of a word carries the per-token round-off of the metric that matches words.
    sources = {name: METRICS.get(name).noise_source for name in table["metric"].unique()}
    figures = np.array([noise.get((layer, head, sources[m]), math.nan) for layer, head, m in keys])
    lines = round_off_lines(figures, dtype)
    judged = verdicts(table["metric"].to_numpy(), table["value"].to_numpy(), lines, resolution)
    if TIED in table.columns:
        tied = table.pop(TIED).to_numpy(dtype=bool)
        judged = np.where(tied & (judged != NON_FINITE), TIE, judged)
    table["verdict"] = judged
    table["value"] = canonical(table["value"].to_numpy(), judged)
    return int((judged == NON_FINITE).sum())
