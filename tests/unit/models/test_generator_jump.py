"""Moving torch's CPU generator on without drawing (models/generator_jump.py): the same state as drawing, for short
moves (numpy's engine stepped) and long ones (the polynomial jump), from any place in a block of 624 words."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from orderlab.models.generator_jump import (
    CHARACTERISTIC,
    DEGREE,
    JUMP_FROM,
    WORDS,
    advance,
    engine,
    jumped,
    read_state,
    stepped,
)


def drawn(outputs: int) -> None:
    """torch's own way on by `outputs` outputs: uniform_ in float32 takes one a number."""
    if outputs:
        torch.empty(outputs).uniform_()


def berlekamp_massey(bits: np.ndarray) -> tuple[int, int]:
    """The shortest linear recurrence of a GF(2) sequence: its connection polynomial (bit i: t^i) and length."""
    connection, previous, length, gap, window = 1, 1, 0, 1, 0
    for n, bit in enumerate(bits):
        window = (window << 1) | int(bit)  # bit k: the sequence's term n - k
        if (connection & window).bit_count() & 1:
            before = connection
            connection ^= previous << gap
            if 2 * length <= n:
                length, previous, gap = n + 1 - length, before, 1
                continue
        gap += 1
    return connection, length


def test_the_characteristic_polynomial_is_the_engines() -> None:
    """Berlekamp-Massey over one bit of 2 x 19,937 outputs finds a recurrence of degree 19,937: its reciprocal is
    the constant the jump reduces by."""
    outputs = engine(np.random.RandomState(3).get_state()[1], WORDS).random_raw(2 * DEGREE + 64)
    connection, length = berlekamp_massey((outputs & 1).astype(np.uint8))
    assert length == DEGREE
    reciprocal = int(format(connection, "b").zfill(length + 1)[::-1], 2)
    assert reciprocal == int(CHARACTERISTIC, 16)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31), before=st.integers(0, 1500), steps=st.integers(0, 60_000))
def test_advance_is_drawing(seed: int, before: int, steps: int) -> None:
    torch.manual_seed(seed)
    drawn(before)
    advance(steps)
    moved = torch.get_rng_state()
    torch.manual_seed(seed)
    drawn(before + steps)
    assert torch.equal(moved, torch.get_rng_state())


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**31), before=st.integers(0, 1300), steps=st.integers(2 * DEGREE - 2000, 3_000_000))
def test_a_jump_lands_where_stepping_does(seed: int, before: int, steps: int) -> None:
    """From any place in a block, over any distance past the short way: the next outputs are the same."""
    torch.manual_seed(seed)
    drawn(before)
    key, position = read_state(torch.get_rng_state())
    want = engine(*stepped(key, position, steps)).random_raw(2 * WORDS + 5)
    assert np.array_equal(engine(*jumped(key, position, steps)).random_raw(2 * WORDS + 5), want)


@pytest.mark.parametrize("landing", [0, 1, 345, WORDS - 1])
def test_a_long_advance_jumps_to_where_drawing_goes(landing: int) -> None:
    """Landing anywhere in a block, its first word too (which torch holds as the block before, used up)."""
    steps = JUMP_FROM + (landing - 100 - JUMP_FROM) % WORDS
    torch.manual_seed(11)
    drawn(100)
    advance(steps)
    moved = torch.get_rng_state()
    torch.manual_seed(11)
    drawn(100 + steps)
    assert torch.equal(moved, torch.get_rng_state())
    assert read_state(moved)[1] == (landing or WORDS)
