"""Metric functions against naive loops over permutations, slots and heads."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from orderlab.metrics import maths as M
from orderlab.models.pooling import pool

GEN = torch.Generator().manual_seed(0)


def test_equivariance_error_matches_a_loop():
    n, d = 4, 5
    h_x = torch.randn(n, d, generator=GEN, dtype=torch.float64)
    perms = list(itertools.permutations(range(n)))[:7]
    h_px = torch.randn(len(perms), n, d, generator=GEN, dtype=torch.float64)
    got = M.equivariance_error(h_px, h_x, torch.tensor(perms))
    for b, p in enumerate(perms):
        permuted_reference = torch.stack([h_x[p[i]] for i in range(n)])
        expected = float((h_px[b] - permuted_reference).norm() / h_x.norm())
        assert abs(got[b].item() - expected) < 1e-12


def test_equivariance_error_is_zero_for_an_exactly_permuted_state():
    h_x = torch.randn(5, 3, generator=GEN, dtype=torch.float64)
    p = torch.tensor([[4, 2, 0, 1, 3]])
    assert M.equivariance_error(h_x[p], h_x, p).item() == 0.0


def test_attention_equivariance_matches_a_loop():
    h, n = 2, 3
    a_x = torch.rand(h, n, n, generator=GEN, dtype=torch.float64)
    perms = [(2, 0, 1), (1, 0, 2)]
    a_px = torch.rand(len(perms), h, n, n, generator=GEN, dtype=torch.float64)
    got = M.attention_equivariance_error(a_px, a_x, torch.tensor(perms))
    for b, p in enumerate(perms):
        for head in range(h):
            expected_map = torch.tensor(
                [[a_x[head, p[i], p[j]].item() for j in range(n)] for i in range(n)], dtype=torch.float64
            )
            expected = float((a_px[b, head] - expected_map).norm() / a_x[head].norm())
            assert abs(got[b, head].item() - expected) < 1e-12


def test_pooled_invariance_of_each_pool():
    """The invariance rows' computation (metric_computations.pooled_change): pool the states, then the relative L2
    distance."""
    h_x = torch.tensor([[1.0, 0.0], [3.0, 4.0]], dtype=torch.float64)
    swapped = h_x[[1, 0]][None]

    def invariance(how: str) -> float:
        return M.relative_l2(pool(h_x, how), pool(swapped, how)).item()

    assert invariance("mean") == 0.0
    assert invariance("max") == 0.0
    # first token: ||(3,4) - (1,0)|| / ||(1,0)|| = sqrt(4 + 16) / 1
    assert abs(invariance("first") - 20**0.5) < 1e-12
    # last token: ||(1,0) - (3,4)|| / ||(3,4)|| = sqrt(20) / 5
    assert abs(invariance("last") - 20**0.5 / 5) < 1e-12


def test_token_shift_follows_the_matching_not_the_spelling():
    h_x = torch.randn(3, 4, generator=GEN, dtype=torch.float64)
    matching = torch.tensor([[2, 1, 0]])
    assert M.token_shift(h_x[[2, 1, 0]][None], h_x, matching).item() == 0.0
    moved = h_x[[2, 1, 0]].clone()
    moved[0] *= 2  # slot 0's word moved by its own norm: relative shift 1, mean over 3 slots 1/3
    assert abs(M.token_shift(moved[None], h_x, matching).item() - 1 / 3) < 1e-12


def test_pair_distances():
    a = torch.tensor([[3.0, 4.0]], dtype=torch.float64)
    assert M.cosine_distance(a, 2 * a).abs().item() < 1e-15  # same direction
    assert abs(M.cosine_distance(a, torch.tensor([[-4.0, 3.0]], dtype=torch.float64)).item() - 1.0) < 1e-15
    assert abs(M.relative_l2(a, torch.tensor([[0.0, 0.0]], dtype=torch.float64)).item() - 1.0) < 1e-15


def apart(angle: float, d: int = 64) -> tuple[torch.Tensor, torch.Tensor]:
    """Two random float64 vectors of different lengths exactly `angle` radians apart."""
    a, other = torch.randn(2, d, generator=GEN, dtype=torch.float64)
    u = a / a.norm()
    w = other - (other @ u) * u
    w = w / w.norm()
    return 3 * a, 0.5 * (math.cos(angle) * u + math.sin(angle) * w)


@pytest.mark.parametrize("angle", [1e-3, 2.4e-3, 1e-2, 0.3])
def test_cosine_distance_of_a_small_angle_agrees_in_float32_and_float64(angle):
    a, b = apart(angle)
    exact = 1 - math.cos(angle)
    in64 = M.cosine_distance(a, b).item()
    in32 = M.cosine_distance(a.float(), b.float()).item()
    assert in64 == pytest.approx(exact, rel=1e-9)
    assert in32 == pytest.approx(in64, rel=1e-4)  # float32 resolves 1e-3 rad: the distance is 5e-7, not 0


def test_one_minus_cos_in_float32_cannot_resolve_the_angle_the_difference_can():
    a, b = apart(1e-3)
    cancelled = 1 - torch.nn.functional.cosine_similarity(a.float(), b.float(), dim=0).item()
    assert abs(cancelled - (1 - math.cos(1e-3))) > 1e-2 * (1 - math.cos(1e-3))  # what the old formula gave


def test_cosine_distance_of_huge_or_empty_vectors():
    huge = torch.tensor([3e30, 4e30])  # float32: the squares overflow a plain norm
    assert M.cosine_distance(huge, torch.tensor([-4e30, 3e30])).item() == pytest.approx(1.0, rel=1e-6)
    assert math.isnan(M.cosine_distance(torch.zeros(2), huge).item())  # a zero vector has no direction


def test_ratio_treats_zero_over_zero_as_no_difference():
    zero = torch.zeros(2, dtype=torch.float64)
    assert M.ratio(zero, zero).tolist() == [0.0, 0.0]
    assert M.ratio(torch.ones(1, dtype=torch.float64), torch.zeros(1, dtype=torch.float64)).item() == float("inf")
