"""Sinusoidal against an independent computation written differently; RoPE's head-size rule.

RoPE and xPos against complex-number rotation: tests/unit/encodings/test_encoding_math.py.
"""

from __future__ import annotations

import math

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


def test_rope_refuses_an_odd_head_size():
    try:
        build_encoding("rope", context(d_model=6, n_heads=2)).validate(context(d_model=6, n_heads=2), {})
    except ValueError as error:
        assert "even head size" in str(error)
    else:
        raise AssertionError("an odd head size was accepted")
