"""The top depths of a prefix trie (prefix_trie.trie_depths) laid out as one packed sequence, a tree: one call of a
causal model over it gives every prefix of those depths its state, where a walk makes one small call per depth.

The root (BOS) is slot 0; then each depth's distinct prefixes, one slot each for the word it adds, depth after depth.
A slot attends to itself and its ancestors only (the mask) and sits at its depth's position (the root's 0), so that
under a causal mask whose positions depend on the slot alone its state is its prefix's in a sequence of its own, to
round-off. On a GPU the top depths hold few prefixes, and a call each costs launches, gathers and copies rather than
arithmetic (docs/performance.md, "Packed top depths"). Knows nothing of models, specs or metrics.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from orderlab.models.prefix_trie import Depth


@dataclass(frozen=True)
class TreeLayout:
    """Depths 0..k-1 of a trie in one sequence of T slots (padded to whole row tiles with copies of the root that
    attend to themselves alone)."""

    word: torch.Tensor  # (T,) the word each slot adds (-1: the root and its padding copies)
    position: torch.Tensor  # (T,) each slot's position: the root 0, depth t's prefixes t + 1
    mask: torch.Tensor  # (T, T) bool: slot i attends to slot j (j is i or one of i's ancestors)
    rows: list[torch.Tensor]  # per packed depth (U,) the slot of each of its (padded) prefixes
    ancestors: torch.Tensor  # (U, k + 1) the deepest packed depth's prefixes: the slots of their tokens, root first


def packed_depths(depths: list[Depth], budget: int, alignment: int) -> int:
    """How many top depths fit one packed sequence of at most `budget` slots (the root counted, padding to a whole
    row tile of `alignment` included); 0: not even the first."""
    slots = 1
    for count, depth in enumerate(depths):
        slots += depth.distinct
        if slots + -slots % alignment > budget:
            return count
    return len(depths)


def tree_layout(depths: list[Depth], alignment: int) -> TreeLayout:
    """Depths (each padded as trie_depths pads it: its first `distinct` prefixes real, the rest copies of the first)
    laid out in one sequence, its slots a multiple of `alignment`."""
    device = depths[0].word.device
    rows: list[torch.Tensor] = []
    words = [torch.full((1,), -1, device=device)]  # the root's slot first
    positions = [torch.zeros(1, dtype=torch.long, device=device)]
    ancestors = torch.zeros(1, 1, dtype=torch.long, device=device)  # the root's own slot
    chains = []  # per depth (distinct, t + 2): the slots of each prefix's tokens, root first, its own last
    start = 1
    for t, depth in enumerate(depths):
        index = torch.arange(len(depth.word), device=device)
        slots = start + torch.where(index < depth.distinct, index, 0)  # padding repeats the first prefix
        ancestors = torch.cat([ancestors[depth.parent], slots[:, None]], dim=1)
        rows.append(slots)
        chains.append(ancestors[: depth.distinct])
        words.append(depth.word[: depth.distinct])
        positions.append(torch.full((depth.distinct,), t + 1, device=device))
        start += depth.distinct
    pad = -start % alignment
    words.append(torch.full((pad,), -1, device=device))
    positions.append(torch.zeros(pad, dtype=torch.long, device=device))
    size = start + pad
    mask = torch.eye(size, dtype=torch.bool, device=device)  # every slot itself; the padding nothing else
    for chain in chains:
        mask[chain[:, -1:].expand_as(chain), chain] = True
    return TreeLayout(torch.cat(words), torch.cat(positions), mask, rows, ancestors)
