"""Tidy rows: the collectors a pass's metric values go to (measure/metric_computations.py computes them), in the
columns vocabulary/columns.py names; the wide summary is measure/summaries.py's. Never prints.

orderlab/measure/loop.py's MeasuringLoop drives these parts chunk by chunk, for every model adapter alike
(orderlab/models).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import pandas as pd
import torch

from orderlab.measure.noise import TIED
from orderlab.metrics import reduction_of


class Collector(Protocol):
    """Where a chunk's metric values go: rows (RowCollector), a running summary, the round-off figures."""

    def add(self, metric: str, layer: int, values: torch.Tensor, head: int | None = None) -> None: ...

    def add_where(self, keep: torch.Tensor, metric: str, layer: int, values: torch.Tensor) -> None: ...

    def mark_ties(self, tied: torch.Tensor | None) -> None: ...


@dataclass(frozen=True)
class MeasuredSweep:
    """A sweep measured whole (measure/sweep_measure.run_sweep): its tidy rows, where and how long it ran."""

    metrics: pd.DataFrame  # tidy, sorted by KEY_COLUMNS
    device: torch.device
    wall_seconds: float


class RowCollector:
    """Columns of tidy rows for one (case, input, encoding) and a batch of B permutations."""

    def __init__(self, case: str, sentence: str, encoding: str, permutations: list[str], permuted: list[str]):
        self.fixed = {"case": case, "input": sentence, "encoding": encoding}
        self.permutations, self.permuted = permutations, permuted
        self.columns: dict[str, list[object]] = {
            c: [] for c in ("permutation", "permuted", "layer", "head", "metric", "value", TIED)
        }
        self.tied: list[bool] | None = None

    def mark_ties(self, tied: torch.Tensor | None) -> None:
        """tied (B,): which permutations' 0/1 answers (a rate metric's rows) lie within their round-off."""
        self.tied = None if tied is None else [bool(t) for t in tied.cpu().tolist()]

    def _ties(self, metric: str, chosen: list[bool] | None = None) -> list[object]:
        count = len(self.permutations) if chosen is None else sum(chosen)
        if self.tied is None or reduction_of(metric) != "rate":
            return [False] * count
        return [t for t, k in zip(self.tied, [True] * len(self.tied) if chosen is None else chosen, strict=True) if k]

    def add(self, metric: str, layer: int, values: torch.Tensor, head: int | None = None) -> None:
        """values: (B,), one per permutation."""
        count = len(self.permutations)
        self.columns[TIED] += self._ties(metric)
        self.columns["permutation"] += self.permutations
        self.columns["permuted"] += self.permuted
        self.columns["layer"] += [layer] * count
        self.columns["head"] += [head] * count
        self.columns["metric"] += [metric] * count
        self.columns["value"] += values.double().cpu().tolist()

    def add_where(self, keep: torch.Tensor, metric: str, layer: int, values: torch.Tensor) -> None:
        """Rows only for the permutations where keep (B,) is True; values: (B,)."""
        chosen = keep.cpu().tolist()
        count = sum(chosen)
        self.columns[TIED] += self._ties(metric, chosen)
        self.columns["permutation"] += [p for p, k in zip(self.permutations, chosen, strict=True) if k]
        self.columns["permuted"] += [p for p, k in zip(self.permuted, chosen, strict=True) if k]
        self.columns["layer"] += [layer] * count
        self.columns["head"] += [None] * count
        self.columns["metric"] += [metric] * count
        self.columns["value"] += values[keep].double().cpu().tolist()

    def frame(self) -> pd.DataFrame:
        frame = pd.DataFrame(self.columns)
        frame["head"] = frame["head"].astype("Int64")
        if not frame[TIED].any():
            frame = frame.drop(columns=TIED)  # judge (noise.py) reads and drops the column where there are ties
        for column, value in self.fixed.items():
            frame[column] = value
        return frame
