"""Sentences to tokens, tokens to vectors. Must not import torch: vectors are plain numpy arrays,
and numpy is imported only where vectors are made (spec validation only tokenizes).

A random word vector depends only on (word, seed, d_model): it is drawn from a generator seeded
by a hash of those three, so it is the same on every run and machine, whatever else the spec
contains.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


def tokenize(sentence: str, lowercase: bool = False) -> list[str]:
    """White-space tokens, optionally lowercased."""
    return (sentence.lower() if lowercase else sentence).split()


def random_word_vector(word: str, seed: int, d_model: int) -> npt.NDArray[np.float64]:
    """A standard-normal vector of length d_model seeded by sha256(seed, d_model, word)."""
    import numpy as np  # lazy: validation tokenizes without numpy

    digest = hashlib.sha256(f"{seed}\x00{d_model}\x00{word}".encode()).digest()
    generator = np.random.Generator(np.random.PCG64(int.from_bytes(digest[:16], "little")))
    return generator.standard_normal(d_model)


def sentence_vectors(
    words: Sequence[str], d_model: int, seed: int, explicit: Mapping[str, Sequence[float]] | None = None
) -> npt.NDArray[np.float64]:
    """(n, d_model) float64 matrix X of a tokenized sentence."""
    import numpy as np  # lazy, as above

    if explicit is not None:
        return np.array([explicit[w] for w in words], dtype=np.float64).reshape(len(words), d_model)
    return np.stack([random_word_vector(w, seed, d_model) for w in words])


def occurrence_matching(original: Sequence[str], reordered: Sequence[str]) -> list[int] | None:
    """For each slot of `reordered`, the slot in `original` of the same word occurrence.

    The k-th occurrence of a word is matched with the k-th occurrence of that word, so two
    copies of "the" are told apart by order of appearance, not by spelling. None if the two
    sentences are not reorderings of each other.
    """
    if sorted(original) != sorted(reordered):
        return None
    slots: dict[str, list[int]] = {}
    for slot, word in enumerate(original):
        slots.setdefault(word, []).append(slot)
    taken: dict[str, int] = {}
    matching = []
    for word in reordered:
        k = taken.get(word, 0)
        matching.append(slots[word][k])
        taken[word] = k + 1
    return matching


def repeated_pairs(words: Sequence[str]) -> list[tuple[int, int]]:
    """Slot pairs (i, j), i < j, holding the same word: 'the cat saw the dog' -> [(0, 3)]."""
    return [(i, j) for i in range(len(words)) for j in range(i + 1, len(words)) if words[i] == words[j]]
