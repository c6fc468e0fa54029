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


class Collector(Protocol):
    """Where a chunk's metric values go: rows (RowCollector), a running summary, the round-off figures."""

    def add(self, metric: str, layer: int, values: torch.Tensor, head: int | None = None) -> None: ...

    def add_where(self, keep: torch.Tensor, metric: str, layer: int, values: torch.Tensor) -> None: ...


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
            c: [] for c in ("permutation", "permuted", "layer", "head", "metric", "value")
        }

    def add(self, metric: str, layer: int, values: torch.Tensor, head: int | None = None) -> None:
        """values: (B,), one per permutation."""
        count = len(self.permutations)
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
        self.columns["permutation"] += [p for p, k in zip(self.permutations, chosen, strict=True) if k]
        self.columns["permuted"] += [p for p, k in zip(self.permuted, chosen, strict=True) if k]
        self.columns["layer"] += [layer] * count
        self.columns["head"] += [None] * count
        self.columns["metric"] += [metric] * count
        self.columns["value"] += values[keep].double().cpu().tolist()

    def frame(self) -> pd.DataFrame:
        frame = pd.DataFrame(self.columns)
        frame["head"] = frame["head"].astype("Int64")
        for column, value in self.fixed.items():
            frame[column] = value
        return frame
