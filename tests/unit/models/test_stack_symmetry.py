"""The science the tool must measure: attention without position is permutation-equivariant."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from stacks import make_stack

FLOAT64_SLACK = 1e-12  # round-off of these stacks is ~1e-16 relative


@st.composite
def stack_and_permutation(draw):
    n_heads = draw(st.sampled_from([1, 2, 4]))
    config = dict(
        d_model=n_heads * draw(st.sampled_from([2, 4, 8])),
        n_heads=n_heads,
        n_layers=draw(st.integers(1, 4)),
        residual=draw(st.booleans()),
        norm=draw(st.sampled_from(["pre", "post", "none"])),
        ffn=draw(st.booleans()),
        scale=draw(st.sampled_from(["sqrt", "none"])),
    )
    n = draw(st.integers(2, 7))
    permutation = draw(st.permutations(list(range(n))))
    seed = draw(st.integers(0, 10_000))
    return config, torch.tensor(permutation), seed


def run_both(encoding: str, config: dict, permutation: torch.Tensor, seed: int):
    stack = make_stack(encoding, seed=seed, **config)
    x = torch.randn(
        len(permutation), config["d_model"], generator=torch.Generator().manual_seed(seed), dtype=torch.float64
    )
    return stack(x[None]), stack(x[permutation][None])


@settings(max_examples=60, deadline=None)
@given(stack_and_permutation())
def test_no_encoding_is_equivariant_at_every_layer(case):
    config, permutation, seed = case
    original, permuted = run_both("none", config, permutation, seed)
    for h_x, h_px in zip(original.hidden, permuted.hidden, strict=True):
        assert torch.allclose(h_px[0], h_x[0][permutation], rtol=0, atol=FLOAT64_SLACK * h_x.abs().max().item())


@settings(max_examples=60, deadline=None)
@given(stack_and_permutation())
def test_attention_maps_permute_as_p_a_pt(case):
    config, permutation, seed = case
    original, permuted = run_both("none", config, permutation, seed)
    for a_x, a_px in zip(original.attention, permuted.attention, strict=True):
        expected = a_x[0][:, permutation][:, :, permutation]  # (h, n, n): A[p_i, p_j]
        assert torch.allclose(a_px[0], expected, rtol=0, atol=FLOAT64_SLACK)


@settings(max_examples=30, deadline=None)
@given(stack_and_permutation(), st.sampled_from(["sinusoidal", "rope"]))
def test_positional_encodings_break_equivariance(case, encoding):
    config, permutation, seed = case
    config = {**config, "d_model": config["n_heads"] * 8}  # even head size for RoPE, enough frequencies
    if torch.equal(permutation, torch.arange(len(permutation))):
        permutation = permutation.flip(0)
    original, permuted = run_both(encoding, config, permutation, seed)
    last_x, last_px = original.hidden[-1][0], permuted.hidden[-1][0]
    relative = (last_px - last_x[permutation]).norm() / last_x.norm()
    assert relative > 1e-6


def test_one_causal_layer_is_not_equivariant_but_keeps_the_first_token():
    stack = make_stack("none", n_layers=1, causal=True, d_model=16, n_heads=2, dtype="float64")
    x = torch.randn(4, 16, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    swap_tail = torch.tensor([0, 1, 3, 2])
    h_x, h_px = stack(x[None]).hidden[-1][0], stack(x[swap_tail][None]).hidden[-1][0]
    assert torch.allclose(h_px[0], h_x[0])  # slot 0 sees only itself
    assert not torch.allclose(h_px, h_x[swap_tail])  # the mask breaks equivariance


def test_hooks_hold_every_intermediate_of_the_same_pass():
    """trace and properties read these; the pattern and output hooks are the pass's own attention and states."""
    from stacks import make_stack

    from orderlab.core.hook_points import HOOK_POINTS, PASS_POINTS, hook_name

    stack = make_stack("sinusoidal", d_model=8, n_heads=2, n_layers=2)
    x = torch.randn(3, 5, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    hooks: dict = {}
    output = stack(x, hooks=hooks)
    assert {hook_name(layer, point) for layer in (1, 2) for point in HOOK_POINTS} | set(PASS_POINTS) == set(hooks)
    assert torch.equal(hooks["tokens"], x) and torch.equal(hooks[hook_name(1, "input")], x + hooks["position"])
    for layer in (1, 2):
        assert torch.equal(hooks[hook_name(layer, "pattern")], output.attention[layer - 1])
        assert torch.equal(hooks[hook_name(layer, "output")], output.hidden[layer])
        assert torch.equal(hooks[hook_name(layer, "pattern")], hooks[hook_name(layer, "scores")].softmax(dim=-1))
    assert torch.equal(stack(x).hidden[-1], output.hidden[-1])  # recording changes nothing
