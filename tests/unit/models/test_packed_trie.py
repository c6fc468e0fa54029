"""models/packed_trie.py: a trie's top depths laid out as one sequence, each slot attending to its own prefix alone."""

from __future__ import annotations

import itertools

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from orderlab.models.packed_trie import packed_depths, tree_layout
from orderlab.models.prefix_trie import trie_depths


@st.composite
def chunks(draw):
    """A contiguous run of an n-word sentence's orders in label order (a chunk), and a row alignment."""
    n = draw(st.integers(2, 4))
    orders = list(itertools.permutations(range(n)))
    start = draw(st.integers(0, len(orders) - 1))
    stop = draw(st.integers(start + 1, len(orders)))
    return torch.tensor(orders[start:stop]), draw(st.sampled_from([1, 4, 16]))


@settings(max_examples=60, deadline=None)
@given(chunks(), st.data())
def test_each_slot_sits_at_its_depth_and_attends_to_its_own_prefix_alone(chunk, data):
    orders, alignment = chunk
    depths = trie_depths(orders, alignment)
    k = data.draw(st.integers(1, len(depths)))
    layout = tree_layout(depths[:k], alignment)
    slots = 1 + sum(depth.distinct for depth in depths[:k])  # the root and each distinct prefix once
    assert len(layout.word) == slots + -slots % alignment  # then padded to whole row tiles
    of_order = torch.zeros(len(orders), dtype=torch.long)  # each order's slot at the current depth: the root's first
    for t, (depth, slots) in enumerate(zip(depths[:k], layout.rows, strict=True)):
        of_order = slots[depth.of_order]
        assert torch.equal(layout.word[of_order], orders[:, t])  # the word the order adds at slot t
        assert torch.equal(layout.position[of_order], torch.full_like(of_order, t + 1))
    chains = layout.ancestors[depths[k - 1].of_order]  # (B, k + 1): each order's tokens, root first
    assert torch.equal(chains[:, 0], torch.zeros(len(orders), dtype=torch.long)) and torch.equal(
        chains[:, -1], of_order
    )
    assert torch.equal(layout.word[chains[:, 1:]], orders[:, :k])
    for chain in chains.tolist():  # a slot's row of the mask: its own prefix's slots, nothing else
        for depth, slot in enumerate(chain):
            assert layout.mask[slot].nonzero().flatten().tolist() == sorted(chain[: depth + 1])
    root_copies = (layout.word < 0).nonzero().flatten()  # the root and the padding: themselves alone, at position 0
    assert torch.equal(layout.mask[root_copies][:, root_copies], torch.eye(len(root_copies), dtype=torch.bool))
    assert layout.mask[root_copies].sum() == len(root_copies) and not layout.position[root_copies].any()


def test_the_depths_packed_are_those_that_fit_the_budget_padding_included():
    depths = trie_depths(torch.tensor(list(itertools.permutations(range(4)))), 16)  # 4, 12, 24, 24 prefixes
    assert [packed_depths(depths, budget, 16) for budget in (16, 31, 32, 64, 65, 80)] == [1, 1, 2, 3, 3, 4]
    assert packed_depths(depths, 4, 1) == 0 and packed_depths(depths, 5, 1) == 1  # the root and 4 prefixes
