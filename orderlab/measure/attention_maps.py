"""attention.csv: the attention of one input as written and reordered, between its words, taken from the measured pass.

The measuring loop already runs f(X) and every reordering with attention maps when attention
metrics are asked for, so the maps drawn are those the metrics were computed from. `shown_maps`
picks the input and reorderings (a pure function of the spec: `attention_maps`, or the first
reordering the input's rule gives that changes the sentence as read); `AttentionCapture` keeps their maps as the
loop passes by, and names the reorderings the rule never reached, which the loop then runs through
the same model. Never prints.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd
import torch

from orderlab.core import permutations as perms
from orderlab.core.text import tokenize
from orderlab.spec.schema import Spec
from orderlab.vocabulary.columns import MAP_COLUMNS, sort_maps


@dataclass(frozen=True)
class ShownMaps:
    """The input and reorderings attention.csv shows; written once, to manifest.json, not on every row."""

    index: int  # in the spec's inputs
    sentence: str
    words: list[str]
    reorderings: list[perms.Permutation]

    def manifest(self) -> dict[str, object]:
        return {
            "input": self.index, "words": " ".join(self.words),
            "reorderings": [{"permutation": perms.label(p), "permuted": " ".join(perms.apply(p, self.words))}
                            for p in self.reorderings],
        }  # fmt: skip


def shown_maps(spec: Spec) -> ShownMaps:
    """attention_maps' input and reorderings; by default its rule's first reordering whose words read differently
    (swapping two copies of "the" moves slots but shows the same sentence), else its first that moves a word, else
    the reversal."""
    chosen = spec.attention_maps
    item = spec.sentences[chosen.input]
    words = tokenize(item.sentence, spec.embeddings.lowercase)
    if chosen.permutations is not None:
        return ShownMaps(chosen.input, item.sentence, words, [tuple(p) for p in chosen.permutations])
    identity = tuple(range(len(words)))
    moved = None
    for permutation in perms.iterate(item.permutations, words, spec.seed):
        if perms.apply(permutation, words) != words:
            return ShownMaps(chosen.input, item.sentence, words, [permutation])
        moved = moved or (permutation if permutation != identity else None)
    return ShownMaps(chosen.input, item.sentence, words, [moved or tuple(reversed(identity))])


# A sentence's maps of one reordering on the model's slots, L x (h, T, T) -> L x (h, n, n) between its words
# (adapter_protocol.Sentence.word_maps): a pretrained model's tokens grouped to words; the stack's are words.
WordMaps = Callable[[list[torch.Tensor], perms.Permutation], list[torch.Tensor]]


class AttentionCapture:
    """Collects, per condition, the word maps of the shown input as written and of each shown reordering."""

    def __init__(self, shown: ShownMaps):
        self.shown = shown
        self.frames: list[pd.DataFrame] = []
        self.kept: set[tuple[str, int]] = set()  # (condition, reordering) whose maps are in

    def keep_original(self, label: str, attention: list[torch.Tensor], word_maps: WordMaps) -> None:
        """attention: L x (1, h, T, T) of the input as written."""
        self._keep(label, 0, attention, 0, tuple(range(len(self.shown.words))), word_maps)

    def keep_shown(
        self, label: str, chunk: list[perms.Permutation], attention: list[torch.Tensor], word_maps: WordMaps
    ) -> None:
        """attention: L x (B, h, T, T) of a chunk of reorderings; keeps those shown."""
        for number, permutation in enumerate(self.shown.reorderings, start=1):
            if permutation in chunk:
                self._keep(label, number, attention, chunk.index(permutation), permutation, word_maps)

    def _keep(
        self, label: str, reordering: int, attention: list[torch.Tensor], index: int, order: perms.Permutation,
        word_maps: WordMaps,
    ) -> None:  # fmt: skip
        self.kept.add((label, reordering))
        for layer, maps in enumerate(word_maps([a[index] for a in attention], order), start=1):
            grid = maps.double().cpu()  # (h, n, n)
            h, n, _ = grid.shape
            self.frames.append(pd.DataFrame({
                "encoding": label, "reordering": reordering, "layer": layer,
                "head": torch.arange(h).repeat_interleave(n * n).numpy(),
                "query": torch.arange(n).repeat_interleave(n).repeat(h).numpy(),
                "key": torch.arange(n).repeat(h * n).numpy(), "value": grid.flatten().numpy(),
            }))  # fmt: skip

    def missing(self, label: str) -> list[perms.Permutation]:
        """The shown reorderings of condition `label` no measured chunk held (the rule does not give them)."""
        return [p for k, p in enumerate(self.shown.reorderings, start=1) if (label, k) not in self.kept]

    def frame(self) -> pd.DataFrame:
        """Rows by encoding, layer, reordering, head, query, key."""
        return sort_maps(pd.concat(self.frames, ignore_index=True))[MAP_COLUMNS]
