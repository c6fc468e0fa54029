"""The science of issue 5: causal masks leak order from two layers on; position decodability;
repeated words. Stacks are built directly, not through spec files."""

from __future__ import annotations

import itertools
from pathlib import Path

import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from stacks import make_stack

from orderlab.core.text import repeated_pairs
from orderlab.measure.adapters import build_adapters
from orderlab.measure.probing import fit_probe, measure_decodability
from orderlab.metrics import maths as M
from orderlab.models.attention_stack import AttentionStack
from orderlab.spec.schema import Spec

FLOAT64_SLACK = 1e-13  # round-off of these stacks is ~1e-16 relative


def prefix_errors(stack: AttentionStack, n: int, seed: int) -> list[torch.Tensor]:
    """Prefix invariance per layer over all orders of the first n - 1 tokens (last kept)."""
    d = stack.config.d_model
    x = torch.randn(n, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    slots = torch.tensor([(*p, n - 1) for p in itertools.permutations(range(n - 1))])  # (B, n)
    reference, permuted = stack(x[None]).hidden, stack(x[slots]).hidden
    return [M.prefix_invariance_error(h_px, h_x[0]) for h_x, h_px in zip(reference, permuted, strict=True)]


@settings(max_examples=40, deadline=None)
@given(
    n_heads=st.sampled_from([1, 2, 4]),
    head_size=st.sampled_from([2, 4, 8]),
    residual=st.booleans(),
    norm=st.sampled_from(["pre", "post", "none"]),
    ffn=st.booleans(),
    n=st.integers(2, 5),
    seed=st.integers(0, 10_000),
)
def test_one_causal_layer_without_encoding_is_prefix_invariant(n_heads, head_size, residual, norm, ffn, n, seed):
    stack = make_stack(seed=seed, d_model=n_heads * head_size, n_heads=n_heads, n_layers=1, residual=residual,
                       norm=norm, ffn=ffn, causal=True)  # fmt: skip
    for errors in prefix_errors(stack, n, seed):
        assert errors.max().item() <= FLOAT64_SLACK


def test_two_causal_layers_leak_the_order_of_the_prefix():
    stack = make_stack(d_model=16, n_heads=2, n_layers=2, causal=True)
    errors = prefix_errors(stack, 5, seed=1)
    assert errors[1].max().item() <= FLOAT64_SLACK  # layer 1: still invariant
    assert errors[2].max().item() > 1e-2  # layer 2: the earlier tokens' outputs carry their prefixes


def test_bidirectional_stack_without_encoding_is_prefix_invariant_at_every_depth():
    stack = make_stack(d_model=16, n_heads=2, n_layers=4, causal=False)
    assert max(e.max().item() for e in prefix_errors(stack, 5, seed=2)) <= FLOAT64_SLACK


def test_prefix_invariance_by_hand():
    # last token moves from [3, 4] to [0, 0]: ||(-3, -4)|| / ||(3, 4)|| = 5 / 5 = 1
    h_x = torch.tensor([[1.0, 0.0], [3.0, 4.0]])
    h_px = torch.tensor([[[1.0, 0.0], [3.0, 4.0]], [[1.0, 0.0], [0.0, 0.0]]])
    assert M.prefix_invariance_error(h_px, h_x).tolist() == [0.0, 1.0]


def test_repeated_pairs_find_every_pair_of_same_word_slots():
    assert repeated_pairs(["the", "cat", "saw", "the", "dog"]) == [(0, 3)]
    assert repeated_pairs(["a", "b", "a", "a"]) == [(0, 2), (0, 3), (2, 3)]
    assert repeated_pairs(["dog", "bites", "man"]) == []


def test_repeated_word_distance_by_hand():
    # slots 0 and 2 hold [3, 4] and [0, 4]: ||(-3, 0)|| / ||(3, 4)|| = 3 / 5; cosine: 1 - 16 / (5 * 4) = 0.2
    h = torch.tensor([[[3.0, 4.0], [9.0, 9.0], [0.0, 4.0]]], dtype=torch.float64)
    pairs = torch.tensor([[[0, 2]]])
    assert torch.allclose(M.repeated_word_distance(h, pairs), torch.tensor([0.6], dtype=torch.float64))
    assert torch.allclose(M.repeated_word_distance(h, pairs, cosine=True), torch.tensor([0.2], dtype=torch.float64))


def test_two_copies_of_a_word_stay_identical_without_position_and_split_with_it():
    x = torch.randn(4, 16, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    x[3] = x[0]  # "the ... the"
    pairs = torch.tensor([[[0, 3]]])
    plain = make_stack(d_model=16, n_heads=2, n_layers=3)(x[None]).hidden
    assert max(M.repeated_word_distance(h, pairs).item() for h in plain) <= FLOAT64_SLACK
    sinusoidal = make_stack("sinusoidal", d_model=16, n_heads=2, n_layers=3)(x[None]).hidden
    assert min(M.repeated_word_distance(h, pairs).item() for h in sinusoidal) > 1e-2


def test_probe_reads_a_linearly_coded_slot_exactly():
    # features = one-hot slot scaled by 2: a linear map recovers the slot perfectly
    slots = torch.arange(4).repeat(10)  # (40,)
    features = 2 * torch.nn.functional.one_hot(slots, 4).double()  # (40, 4)
    weights, bias = fit_probe(features, slots, 4)
    assert torch.equal((features @ weights + bias).argmax(dim=-1), slots)


def decodability(encoding: str, causal: bool = False) -> dict[int, float]:
    spec = Spec.model_validate({
        "model": {"d_model": 64, "n_heads": 4, "n_layers": 2, "causal": causal},
        "encodings": [encoding], "inputs": [{"sentence": "a b"}],
        "decodability": {"sentences": 256, "length": 6},
    })  # fmt: skip
    rows = measure_decodability(spec, build_adapters(spec, torch.device("cpu"), Path("spec.yaml")))
    accuracy = rows[rows["metric"] == "position_accuracy"]
    assert set(rows.loc[rows["metric"] == "position_chance", "value"]) == {1 / 6}
    return dict(zip(accuracy["layer"], accuracy["value"], strict=True))


def test_position_is_not_decodable_in_a_bidirectional_stack_without_encoding():
    # every hidden state is equivariant, so a token's state says nothing about its slot: chance is 1/6 = 0.167,
    # and 64 held-out sentences x 6 tokens put three standard deviations at about 0.057
    for layer, accuracy in decodability("none").items():
        assert accuracy < 1 / 6 + 0.06, layer


def test_sinusoidal_position_is_decodable_at_layer_zero():
    assert decodability("sinusoidal")[0] > 0.7  # more than four times chance (measured: 0.83)
