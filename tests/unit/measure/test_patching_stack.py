"""Activation patching on the attention stack (measure/patch_targets.py): a causal 2-layer stack without positions
and a reordering of the words before the last, so that the last word's layer-1 state is the same in both orders
(causal attention over the same set of words) and what it reads at layer 2 is all that differs."""

from __future__ import annotations

import pytest

import orderlab.api as ol
from orderlab.errors import OrderlabError

WORDS = ["the", "dog", "saw", "a", "cat"]
TARGET = [2, 0, 3, 1, 4]  # the words before the last reordered
STACK = {"d_model": 16, "n_heads": 2, "n_layers": 2, "causal": True}
EVERY = [0, 1, 2, 3, 4]


def spec(patching: dict, model: dict = STACK) -> dict:
    return {"name": "patched", "model": model, "encodings": ["none"], "metrics": ["equivariance"],
            "inputs": [{"sentence": " ".join(WORDS), "permutations": [TARGET]}], "patching": patching}  # fmt: skip


@pytest.fixture(scope="module")
def patched():
    patching = {"points": ["output", "q", "pattern"], "slots": [EVERY, [], [4], [1]]}
    frame = ol.patch(spec(patching)).shares
    return frame.set_index(["point", "layer", "slots"])["verdict"].sort_index()


def test_every_slot_of_layer_1_recovers_the_whole_difference_the_last_alone_none_and_nothing_none(patched):
    assert patched["output", 1, "0+1+2+3+4"] == "recovers all"
    assert patched["output", 1, "4"] == "recovers none"  # its layer-1 state was already the source's
    assert patched["output", 1, "none"] == "recovers none"
    assert patched["output", 1, "1"] == "recovers part"


def test_queries_and_attention_rows_are_patched_by_their_query_slot(patched):
    assert set(patched["q", 2]) == {"recovers none"}  # the last slot's query is the same in both orders
    assert patched["q", 1, "0+1+2+3+4"] == "recovers part"
    assert patched["pattern", 2, "1"] == "recovers none"  # another slot's row of the last layer: never read
    assert patched["pattern", 2, "4"] == "recovers part"  # the last slot's own row, over the target's values


def test_a_point_the_stack_does_not_form_is_refused_in_one_line():
    without_ffn = {**STACK, "ffn": False}
    with pytest.raises(OrderlabError, match=r"^patching: points: '1\.mid' is no hook point; expected L\.POINT"):
        ol.patch(spec({"points": ["mid"]}, without_ffn))


def test_an_attention_map_is_read_in_the_target_slots_on_its_query_and_its_key_axis():
    import torch

    from orderlab.core.hook_points import token_axes
    from orderlab.measure.patching import in_target_slots

    pattern = torch.arange(9.0).reshape(1, 3, 3)  # one head: row i is query slot i, column j key slot j
    reads = torch.tensor([2, 0, 1])  # target slot 0 holds the source's slot-2 word, ...
    moved = in_target_slots(pattern, reads, token_axes("pattern"))
    assert moved[0].tolist() == [[8.0, 6.0, 7.0], [2.0, 0.0, 1.0], [5.0, 3.0, 4.0]]
    q = torch.arange(6.0).reshape(1, 3, 2)  # (heads, slots, d_head): only the slots move
    assert in_target_slots(q, reads, token_axes("q"))[0].tolist() == [[4.0, 5.0], [0.0, 1.0], [2.0, 3.0]]
