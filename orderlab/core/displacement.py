"""How far an order moves a sentence's words from where they were: the measures the word-order literature plots its
metrics against. Pure; a permutation p puts at slot i the word from slot p[i] (permutations.py).

- mean absolute displacement: (1/n) sum_i |p[i] - i|, in slots per word.
- Kendall's tau distance: the pairs of words whose relative order the permutation flips (its inversions), from 0
  (the original) to n(n-1)/2 (the reversal).
- index displacement count (IDC, Clouatre et al. 2022, "Local Structure Matters Most"): the mean absolute
  displacement over the sequence's length, (1/n^2) sum_i |p[i] - i|, so that sentences of different lengths compare.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

MEASURES = ("mean_abs_displacement", "kendall_tau_distance", "index_displacement_count")


def mean_abs_displacement(p: Sequence[int]) -> float:
    """(1/n) sum_i |p[i] - i|; 0 for an empty order."""
    return sum(abs(source - slot) for slot, source in enumerate(p)) / len(p) if p else 0.0


def kendall_tau_distance(p: Sequence[int]) -> int:
    """Pairs i < j with p[i] > p[j], counted in n log n: each slot's source against the larger ones seen before it."""
    seen: list[int] = []
    flipped = 0
    for source in p:
        at = bisect.bisect_right(seen, source)
        flipped += len(seen) - at
        seen.insert(at, source)
    return flipped


def index_displacement_count(p: Sequence[int]) -> float:
    """Clouatre et al.'s IDC: the mean absolute displacement over the length n."""
    return mean_abs_displacement(p) / len(p) if p else 0.0


def measures(p: Sequence[int]) -> tuple[float, int, float]:
    """The three measures of one order, in MEASURES' order."""
    return mean_abs_displacement(p), kendall_tau_distance(p), index_displacement_count(p)
