"""Whole words as groups of sub-tokens: moving words, pooling their sub-token states. Torch-free.

A model's tokenizer splits a word into sub-tokens ("unbelievable" -> "un", "##believ", "##able")
and wraps the sentence in specials ([CLS] ... [SEP]). A word permutation p (slot i of the new
sentence holds word p[i], as in orderlab.core.permutations) moves each word's sub-tokens together, in
their own order, and leaves the specials where they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from orderlab.core.permutations import Permutation

Span = tuple[int, int]  # [start, end) of a word's sub-tokens in the token sequence


@dataclass(frozen=True)
class WordTokens:
    """A tokenized sentence: token ids (specials included) and each word's span of sub-tokens."""

    ids: tuple[int, ...]
    spans: tuple[Span, ...]

    @property
    def n_tokens(self) -> int:
        return len(self.ids)

    def token_permutation(self, p: Permutation) -> tuple[int, ...]:
        """The token-level permutation that moves whole words by p; specials stay at their slots."""
        head = range(self.spans[0][0])  # [CLS]
        body = [t for word in p for t in range(*self.spans[word])]
        tail = range(self.spans[-1][1], self.n_tokens)  # [SEP]
        return (*head, *body, *tail)

    def permuted(self, p: Permutation) -> WordTokens:
        """The tokens of the reordered sentence, with its words' spans in the new slot order."""
        order = self.token_permutation(p)
        lengths = [self.spans[word][1] - self.spans[word][0] for word in p]
        starts = self.spans[0][0] + np.concatenate([[0], np.cumsum(lengths)[:-1]])
        spans = tuple((int(s), int(s) + n) for s, n in zip(starts, lengths, strict=True))
        return WordTokens(tuple(self.ids[t] for t in order), spans)

    def pooling(self) -> npt.NDArray[np.float64]:
        """(n_words, n_tokens) matrix M with M @ H = each word's mean sub-token state."""
        matrix = np.zeros((len(self.spans), self.n_tokens))
        for word, (start, end) in enumerate(self.spans):
            matrix[word, start:end] = 1.0 / (end - start)
        return matrix


def spans_from_word_ids(word_ids: Sequence[int | None], n_words: int) -> tuple[Span, ...]:
    """Each word's [start, end) from a tokenizer's word_ids(); ValueError if a word has no or split tokens."""
    spans = []
    for word in range(n_words):
        slots = [t for t, w in enumerate(word_ids) if w == word]
        if not slots:
            raise ValueError(f"word {word} has no tokens")
        if slots != list(range(slots[0], slots[-1] + 1)):
            raise ValueError(f"word {word}'s tokens are not contiguous")
        spans.append((slots[0], slots[-1] + 1))
    return tuple(spans)
