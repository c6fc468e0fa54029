"""How far an order moves a sentence's words from where they were: the measures the word-order literature plots its
metrics against. Pure; a permutation p puts at slot i the word from slot p[i] (permutations.py).

- mean absolute displacement: (1/n) sum_i |p[i] - i|, in slots per word.
- Kendall's tau distance: the pairs of words whose relative order the permutation flips (its inversions), from 0
  (the original) to n(n-1)/2 (the reversal).
- index displacement count (IDC, Clouatre et al. 2022, "Local Structure Matters Most"): the mean absolute
  displacement over the sequence's length, (1/n^2) sum_i |p[i] - i|, so that sentences of different lengths compare.
- dependency displacement (only where a parse is supplied): the mean, over the parse's arcs (a word and its head),
  of how much the order changes the arc's length, |(|q[h] - q[d]|) - |h - d||, with q the slot each word lands in.
  orderlab's own measure, not Clouatre et al.'s (their local measure, DND, counts linear neighbours): it reads
  structure rather than position, so the reversal, which keeps every arc's length, scores 0.
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


def dependency_displacement(p: Sequence[int], heads: Sequence[int]) -> float:
    """Mean over arcs (d, h = heads[d] - 1; heads CoNLL-style, 1-based, 0 the root) of |(|q[h] - q[d]|) - |h - d||,
    q the inverse of p (the slot word w lands in); 0 for a parse with no arc (one word)."""
    landed = [0] * len(p)
    for slot, source in enumerate(p):
        landed[source] = slot
    changes = [abs(abs(landed[h - 1] - landed[d]) - abs(h - 1 - d)) for d, h in enumerate(heads) if h]
    return sum(changes) / len(changes) if changes else 0.0


def parse_problem(heads: Sequence[int], words: int) -> str | None:
    """Why `heads` is not a dependency tree over `words` words (CoNLL heads: 1-based, 0 the root), or None."""
    if len(heads) != words:
        return f"{len(heads)} heads for {words} words; expected one head per word"
    if any(not 0 <= h <= words for h in heads):
        return f"a head outside 0..{words}; expected each word's head as 1..{words}, or 0 for the root"
    if list(heads).count(0) != 1:
        return f"{list(heads).count(0)} roots; expected exactly one word with head 0"
    for start in range(words):  # every word reaches the root within `words` steps, or there is a cycle
        word, steps = start, 0
        while heads[word] and steps <= words:
            word, steps = heads[word] - 1, steps + 1
        if heads[word]:
            return f"word {start + 1} never reaches the root (a cycle); expected a tree"
    return None


def measures(p: Sequence[int]) -> tuple[float, int, float]:
    """The three measures of one order, in MEASURES' order."""
    return mean_abs_displacement(p), kendall_tau_distance(p), index_displacement_count(p)
