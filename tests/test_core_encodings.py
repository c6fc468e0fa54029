"""Sinusoidal and RoPE against independent computations written differently."""

from __future__ import annotations

import math

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from orderlab.encodings import EncodingContext, build_encoding


def context(d_model: int = 8, n_heads: int = 1) -> EncodingContext:
    return EncodingContext(d_model=d_model, n_heads=n_heads, causal=False, seed=0, dtype="float64")


def test_sinusoidal_table_matches_the_formula_loop_by_loop():
    d, n = 6, 5
    table = build_encoding("sinusoidal", context(d_model=d)).input_offsets(n)
    for pos in range(n):
        for i in range(d // 2):
            angle = pos / 10000 ** (2 * i / d)  # e.g. pos 1, i 1: 1 / 10000^(1/3) = 0.0464
            assert math.isclose(table[pos, 2 * i].item(), math.sin(angle), abs_tol=1e-15)
            assert math.isclose(table[pos, 2 * i + 1].item(), math.cos(angle), abs_tol=1e-15)
    assert table[0, 0] == 0.0 and table[0, 1] == 1.0  # slot 0: sin 0, cos 0


def rope_with_complex_numbers(x: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """x (n, d): pair (x[2i], x[2i+1]) as the complex number x[2i] + i x[2i+1], times e^{i pos theta_i}."""
    n, d = x.shape
    out = torch.empty_like(x)
    for pos in range(n):
        for i in range(d // 2):
            z = complex(x[pos, 2 * i].item(), x[pos, 2 * i + 1].item())
            z *= complex(math.cos(pos * base ** (-2 * i / d)), math.sin(pos * base ** (-2 * i / d)))
            out[pos, 2 * i], out[pos, 2 * i + 1] = z.real, z.imag
    return out


def test_rope_rotation_matches_complex_multiplication():
    q = torch.randn(1, 1, 6, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    rotated, _ = build_encoding("rope", context()).rotate(q, q)
    assert torch.allclose(rotated[0, 0], rope_with_complex_numbers(q[0, 0]), atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 5))
def test_rope_scores_depend_only_on_the_offset(seed, shift):
    n, d = 6, 8
    generator = torch.Generator().manual_seed(seed)
    content_q, content_k = torch.randn(2, d, dtype=torch.float64, generator=generator)
    q = content_q.expand(1, 1, n + shift, d)  # the same query content at every slot
    k = content_k.expand(1, 1, n + shift, d)
    rq, rk = build_encoding("rope", context()).rotate(q, k)
    scores = (rq @ rk.transpose(-2, -1))[0, 0]  # (n+shift, n+shift)
    assert torch.allclose(scores[shift:, shift:], scores[:n, :n], atol=1e-10)


def test_rope_refuses_an_odd_head_size():
    try:
        build_encoding("rope", context(d_model=6, n_heads=2)).validate(context(d_model=6, n_heads=2), {})
    except ValueError as error:
        assert "even head size" in str(error)
    else:
        raise AssertionError("an odd head size was accepted")
