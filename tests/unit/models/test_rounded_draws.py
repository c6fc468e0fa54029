"""A 16-bit draw is its float32 draw, rounded (models/rounded_draws.py): the numbers and the generator's end state,
drawn a piece at a time or whole, whichever way torch is asked (a tensor's own draw, torch.nn.init's), with what
torch refuses still refused."""

from __future__ import annotations

from unittest import mock

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import orderlab.models.rounded_draws as rounded_draws
from orderlab.models.rounded_draws import SIXTEEN_BIT, RoundedDraws, drawn_rounded, pieces, rounds


@settings(max_examples=120, deadline=None)
@given(numbers=st.integers(0, 200), piece=st.sampled_from([16, 32, 48]), name=st.sampled_from(["normal_", "uniform_"]),
       dtype=st.sampled_from(SIXTEEN_BIT), seed=st.integers(0, 2**31))  # fmt: skip
def test_a_16_bit_draw_is_the_float32_draw_rounded_a_piece_at_a_time(
    numbers: int, piece: int, name: str, dtype: torch.dtype, seed: int
) -> None:
    """Pieces of 16 to 48 numbers over tensors of up to 200: normal_'s blocks of 16 and its remainder, drawn again,
    fall as in one float32 draw."""
    wide = torch.Generator().manual_seed(seed)
    want = getattr(torch.empty(numbers), name)(generator=wide)
    narrow = torch.Generator().manual_seed(seed)
    got = torch.empty(numbers, dtype=dtype)
    with mock.patch.object(rounded_draws, "PIECE", piece):
        drawn_rounded(getattr(torch.Tensor, name), got, generator=narrow)
    assert torch.equal(got, want.to(dtype))
    assert torch.equal(narrow.get_state(), wide.get_state())


@pytest.mark.parametrize(("numbers", "normal", "cuts"), [
    (0, True, []), (10, True, [(0, 10)]), (40, True, [(0, 16), (16, 40)]),
    (33, False, [(0, 16), (16, 32), (32, 33)]),
    (33, True, [(0, 16), (16, 33)]),  # a last piece of 1 would be drawn another way: it goes with the one before
])  # fmt: skip
def test_pieces_start_on_blocks_and_never_leave_a_normal_remainder_alone(numbers, normal, cuts) -> None:
    with mock.patch.object(rounded_draws, "PIECE", 16):
        assert pieces(numbers, normal) == cuts


@pytest.mark.parametrize("dtype", SIXTEEN_BIT)
def test_torch_nn_init_draws_are_float32_draws_rounded(dtype: torch.dtype) -> None:
    """kaiming_uniform_'s bound comes from the fan: drawn whole, in a scratch of the tensor's shape; xavier_normal_
    and kaiming_normal_ hand their tensor's own normal_ on, drawn a piece at a time."""
    for init in (torch.nn.init.kaiming_uniform_, torch.nn.init.xavier_normal_, torch.nn.init.kaiming_normal_):
        torch.manual_seed(3)
        want = init(torch.empty(24, 40))
        torch.manual_seed(3)
        got = torch.empty(24, 40, dtype=dtype)
        with RoundedDraws():
            init(got)
        assert torch.equal(got, want.to(dtype)), init.__name__


def test_what_torch_refuses_is_refused_and_what_is_not_16_bit_left_to_torch() -> None:
    """A tensor's own draw on a leaf that needs grad is refused, as torch refuses it; torch.nn.init writes it, as
    torch.nn.init does. A float32, a non-contiguous or a non-draw call is not rounded."""
    weight = torch.nn.Parameter(torch.empty(32, dtype=torch.bfloat16))
    with pytest.raises(RuntimeError, match="leaf Variable"), RoundedDraws():
        weight.normal_()
    with RoundedDraws():
        torch.nn.init.normal_(weight)
    assert weight.float().std() > 0
    assert not rounds(torch.Tensor.normal_, torch.empty(32))
    assert not rounds(torch.Tensor.normal_, torch.empty(8, 8, dtype=torch.bfloat16).t())
    assert not rounds(torch.Tensor.mul_, torch.empty(32, dtype=torch.bfloat16))
    assert not rounds(torch.nn.init.zeros_, torch.empty(32, dtype=torch.bfloat16))  # a fill: no scratch needed
    assert rounds(torch.nn.init.normal_, torch.empty(32, dtype=torch.float16))
