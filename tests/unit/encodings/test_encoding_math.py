"""Each encoding against an independent computation written differently: loops, complex numbers, hand-worked numbers."""

from __future__ import annotations

import cmath
import math

import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from orderlab.encodings import EncodingContext, build_encoding
from orderlab.encodings.alibi import alibi_slopes
from orderlab.encodings.encoding import seeded_table
from orderlab.encodings.t5_bias import relative_buckets


def context(causal: bool = False, **extra) -> EncodingContext:
    """d_model 16, 4 heads of 4."""
    return EncodingContext(d_model=16, n_heads=4, causal=causal, **({"seed": 3} | extra))


def qk(n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Two seeded (B=2, h=4, n, d_head=4) tensors."""
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(2, 4, n, 4, generator=generator, dtype=torch.float64)
    return q, torch.randn(2, 4, n, 4, generator=generator, dtype=torch.float64)


# --- ALiBi ---------------------------------------------------------------------------------------


def test_alibi_slopes_for_8_heads_are_one_half_to_one_over_256():
    # base = 2 ** (-8 / 8) = 1/2; head k gets base ** k
    assert alibi_slopes(8) == [1 / 2, 1 / 4, 1 / 8, 1 / 16, 1 / 32, 1 / 64, 1 / 128, 1 / 256]


def test_alibi_slopes_for_4_heads_are_powers_of_one_quarter():
    # base = 2 ** (-8 / 4) = 1/4
    assert alibi_slopes(4) == [1 / 4, 1 / 16, 1 / 64, 1 / 256]


def test_alibi_slopes_for_6_heads_add_every_other_slope_of_8_heads():
    # 4 heads: 1/4, 1/16, 1/64, 1/256; 8 heads' 1/2, 1/8, 1/32, 1/128 taken every other, two of them: 1/2, 1/8
    assert alibi_slopes(6) == [1 / 4, 1 / 16, 1 / 64, 1 / 256, 1 / 2, 1 / 8]


def test_alibi_slopes_for_12_heads_add_every_other_slope_of_16_heads():
    # 8 heads: 2^-1 .. 2^-8; 16 heads' slopes are 2^-(k/2), every other from the first: 2^-0.5, -1.5, -2.5, -3.5
    assert alibi_slopes(12) == pytest.approx([2.0**-k for k in range(1, 9)] + [2**-0.5, 2**-1.5, 2**-2.5, 2**-3.5])


@pytest.mark.parametrize("causal", [False, True])
def test_alibi_bias_matches_a_loop_over_heads_and_slots(causal):
    n = 5
    q, k = qk(n)
    bias = build_encoding("alibi", context(causal)).attention_bias(q, k)
    slopes = [1 / 4, 1 / 16, 1 / 64, 1 / 256]
    for h in range(4):
        for i in range(n):
            for j in range(n):
                distance = max(i - j, 0) if causal else abs(i - j)
                assert bias[h, i, j].item() == pytest.approx(-slopes[h] * distance)


# --- T5 ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("offset", "bucket"),
    [
        (0, 0),
        (3, 3),  # exact: below max_exact = (32 // 2) // 2 = 8
        (7, 7),
        (8, 8),  # 8 + floor(log(8/8) / log(128/8) * 8) = 8
        (16, 10),  # 8 + floor(log(2) / log(16) * 8) = 8 + floor(2.0) = 10
        (127, 15),  # 8 + floor(log(15.875) / log(16) * 8) = 8 + floor(7.98) = 15
        (500, 15),  # clamped to the last bucket of the half
        (-1, 17),  # key after the query: upper half, 16 + 1
        (-16, 26),  # 16 + 10
    ],
)
def test_t5_bidirectional_buckets_match_hand_computed_values(offset, bucket):
    got = relative_buckets(torch.tensor([offset]), bidirectional=True, num_buckets=32, max_distance=128)
    assert got.item() == bucket


@pytest.mark.parametrize(
    ("offset", "bucket"),
    [
        (-5, 0),  # future keys: bucket 0 (masked anyway)
        (15, 15),  # exact below max_exact = 32 // 2 = 16
        (20, 17),  # 16 + floor(log(20/16) / log(128/16) * 16) = 16 + floor(1.717) = 17
        (64, 26),  # 16 + floor(log(4) / log(8) * 16) = 16 + floor(10.67) = 26
        (1000, 31),
    ],
)
def test_t5_causal_buckets_match_hand_computed_values(offset, bucket):
    got = relative_buckets(torch.tensor([offset]), bidirectional=False, num_buckets=32, max_distance=128)
    assert got.item() == bucket


def scalar_bucket(offset: int, bidirectional: bool, num_buckets: int, max_distance: int) -> int:
    """The bucketing rule rewritten with Python scalars and math.log."""
    bucket = 0
    if bidirectional:
        num_buckets //= 2
        bucket = num_buckets if offset < 0 else 0
        distance = abs(offset)
    else:
        distance = max(offset, 0)
    exact = num_buckets // 2
    if distance < exact:
        return bucket + distance
    far = exact + int(math.log(distance / exact) / math.log(max_distance / exact) * (num_buckets - exact))
    return bucket + min(far, num_buckets - 1)


@settings(max_examples=80, deadline=None)
@given(
    offset=st.integers(-400, 400),
    bidirectional=st.booleans(),
    num_buckets=st.sampled_from([8, 16, 32, 64]),
    max_distance=st.sampled_from([32, 64, 128, 256]),
)
def test_t5_buckets_match_a_scalar_rewrite(offset, bidirectional, num_buckets, max_distance):
    assume(max_distance > (num_buckets // 2 if bidirectional else num_buckets) // 2)  # what T5Bias.check demands
    got = relative_buckets(torch.tensor([offset]), bidirectional, num_buckets, max_distance).item()
    assert got == scalar_bucket(offset, bidirectional, num_buckets, max_distance)


@pytest.mark.parametrize("causal", [False, True])
def test_t5_bias_is_one_table_entry_per_head_and_bucket(causal):
    n = 12
    q, k = qk(n)
    bias = build_encoding("t5", context(causal), {"num_buckets": 8, "max_distance": 16}).attention_bias(q, k)
    table = seeded_table(context(causal), "t5", 4, 8)  # (heads, buckets), drawn the same way
    for i in range(n):
        for j in range(n):
            assert torch.equal(bias[:, i, j], table[:, scalar_bucket(i - j, not causal, 8, 16)])


# --- RoPE and xPos -------------------------------------------------------------------------------


def complex_rotary(x: torch.Tensor, decay: list[float] | None = None, sign: int = 1) -> torch.Tensor:
    """Pair (x[2i], x[2i+1]) as a complex number times e^{1j m theta_i} (and decay_i ** (sign m / 512)), by loops."""
    *_, n, d = x.shape
    flat, result = x.reshape(-1, n, d), torch.empty(x.shape, dtype=x.dtype).reshape(-1, n, d)
    for row in range(flat.shape[0]):
        for m in range(n):
            for i in range(d // 2):
                theta = 10000.0 ** (-2 * i / d)
                z = complex(flat[row, m, 2 * i].item(), flat[row, m, 2 * i + 1].item()) * cmath.exp(1j * m * theta)
                if decay is not None:
                    z *= decay[i] ** (sign * m / 512)
                result[row, m, 2 * i], result[row, m, 2 * i + 1] = z.real, z.imag
    return result.reshape(x.shape)


def test_rope_matches_complex_number_rotation():
    q, k = qk(5)
    rotated_q, rotated_k = build_encoding("rope", context()).rotate(q, k)
    assert torch.allclose(rotated_q, complex_rotary(q), atol=1e-12)
    assert torch.allclose(rotated_k, complex_rotary(k), atol=1e-12)


def test_xpos_is_rope_with_q_scaled_by_zeta_to_the_slot_and_k_by_its_inverse():
    q, k = qk(5)
    zeta = [(0 / 4 + 0.4) / 1.4, (2 / 4 + 0.4) / 1.4]  # d_head = 4: 0.2857, 0.6429
    rotated_q, rotated_k = build_encoding("xpos", context()).rotate(q, k)
    assert torch.allclose(rotated_q, complex_rotary(q, zeta, +1), atol=1e-12)
    assert torch.allclose(rotated_k, complex_rotary(k, zeta, -1), atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(shift=st.integers(1, 40), name=st.sampled_from(["rope", "xpos"]))
def test_rotary_scores_depend_on_the_offset_only(shift, name):
    q, k = qk(4, seed=shift)
    encoding = build_encoding(name, context())
    pad = torch.zeros(2, 4, shift, 4, dtype=torch.float64)
    q0, k0 = encoding.rotate(q, k)
    q1, k1 = encoding.rotate(torch.cat([pad, q], dim=2), torch.cat([pad, k], dim=2))
    scores, shifted = q0 @ k0.transpose(-2, -1), q1[:, :, shift:] @ k1[:, :, shift:].transpose(-2, -1)
    assert torch.allclose(scores, shifted, rtol=1e-9, atol=1e-9)


# --- learned -------------------------------------------------------------------------------------


def test_learned_offsets_are_rows_of_one_seeded_table_whatever_the_length():
    encoding = build_encoding("learned", context(), {"max_len": 10})
    long, short = encoding.input_offsets(10), encoding.input_offsets(4)
    assert long.shape == (10, 16)
    assert torch.equal(long, seeded_table(context(), "learned", 10, 16))
    assert torch.equal(long[:4], short)
    assert not torch.equal(long, build_encoding("learned", context(seed=4), {"max_len": 10}).input_offsets(10))


def test_learned_refuses_sentences_longer_than_max_len():
    encoding = build_encoding("learned", context(), {"max_len": 4})
    with pytest.raises(ValueError, match="longer than max_len=4"):
        encoding.input_offsets(5)
    with pytest.raises(ValueError, match="expected max_len >= 7"):
        type(encoding).validate(context(max_len=7), {"max_len": 4})


# --- CoPE ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("causal", [False, True])
def test_cope_bias_matches_loops_over_gates_and_interpolation(causal):
    n, npos_max = 5, 3  # a small npos_max, so the clamp is exercised
    q, k = qk(n)
    bias = build_encoding("cope", context(causal), {"npos_max": npos_max}).attention_bias(q, k)
    table = seeded_table(context(causal), "cope", npos_max, 4)  # (P, d_head)
    for b in range(2):
        for h in range(4):
            for i in range(n):
                for j in range(n):
                    # gates sigmoid(q_i . k_t / sqrt(4)) summed over t from min(i, j) to max(i, j)
                    count = sum(
                        torch.sigmoid(q[b, h, i] @ k[b, h, t] / 2).item() for t in range(min(i, j), max(i, j) + 1)
                    )
                    count = min(count, npos_max - 1)
                    low, high = math.floor(count), min(math.floor(count) + 1, npos_max - 1)
                    logits = [(q[b, h, i] @ table[p]).item() / 2 for p in range(npos_max)]
                    expected = logits[low] * (1 - (count - low)) + logits[high] * (count - low)
                    assert bias[b, h, i, j].item() == pytest.approx(expected, abs=1e-12)
