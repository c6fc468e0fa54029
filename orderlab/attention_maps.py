"""attention.csv: the attention of one input and one reordering of it, taken from the measured pass.

The measuring loop already runs f(X) and every reordering with attention maps when attention
metrics are asked for, so the maps drawn are those the metrics were computed from: nothing here
runs a model. `shown_reordering` picks the input and reordering (a pure function of the spec);
`AttentionCapture` keeps their maps as the loop passes by. Never prints.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import torch

from orderlab import permutations as perms
from orderlab.spec import Spec
from orderlab.text import tokenize

MAP_COLUMNS = ["encoding", "sentence", "layer", "head", "query", "key", "value"]  # after any swept columns


@dataclass(frozen=True)
class ShownReordering:
    """The input and reordering attention.csv shows; written once, to manifest.json, not on every row."""

    sentence: str
    words: list[str]
    permutation: perms.Permutation

    def manifest(self) -> dict[str, int | str]:
        return {
            "input": 0, "words": " ".join(self.words), "permutation": perms.label(self.permutation),
            "permuted": " ".join(perms.apply(self.permutation, self.words)),
        }  # fmt: skip


def shown_reordering(spec: Spec) -> ShownReordering:
    """The first input and its rule's first non-identity reordering (the reversal if the rule has none)."""
    item = spec.sentences[0]
    words = tokenize(item.sentence, spec.embeddings.lowercase)
    identity = tuple(range(len(words)))
    moved = next((p for p in perms.iterate(item.permutations, len(words), spec.seed) if p != identity), None)
    return ShownReordering(item.sentence, words, moved or tuple(reversed(identity)))


class AttentionCapture:
    """Collects, per condition, the maps of the shown input (original) and of its shown reordering (permuted)."""

    def __init__(self, shown: ShownReordering):
        self.shown = shown
        self.frames: list[pd.DataFrame] = []

    def keep(self, label: str, which: str, attention: list[torch.Tensor], index: int = 0) -> None:
        """attention: L x (B, h, T, T) of one pass; keeps batch row `index` as `which` (original | permuted)."""
        for layer, maps in enumerate(attention, start=1):
            grid = maps[index].double().cpu()  # (h, T, T)
            h, n, _ = grid.shape
            self.frames.append(pd.DataFrame({
                "encoding": label, "sentence": which, "layer": layer,
                "head": torch.arange(h).repeat_interleave(n * n).numpy(),
                "query": torch.arange(n).repeat_interleave(n).repeat(h).numpy(),
                "key": torch.arange(n).repeat(h * n).numpy(), "value": grid.flatten().numpy(),
            }))  # fmt: skip

    def frame(self) -> pd.DataFrame:
        return sort_maps(pd.concat(self.frames, ignore_index=True))[MAP_COLUMNS]


def sort_maps(table: pd.DataFrame, leading: list[str] | None = None) -> pd.DataFrame:
    """Rows by the `leading` columns (a sweep's), encoding, layer, then original before permuted, head, query, key."""
    order = {"original": 0, "permuted": 1}
    return table.sort_values(
        [*(leading or []), "encoding", "layer", "sentence", "head", "query", "key"], kind="mergesort",
        ignore_index=True, key=lambda column: column.map(order) if column.name == "sentence" else column,
    )  # fmt: skip
