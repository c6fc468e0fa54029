"""Metric functions against naive loops over permutations, slots and heads."""

from __future__ import annotations

import itertools

import torch

from orderlab.measure import metrics as M

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
    h_x = torch.tensor([[1.0, 0.0], [3.0, 4.0]], dtype=torch.float64)
    swapped = h_x[[1, 0]][None]
    assert M.invariance_error(swapped, h_x, "mean").item() == 0.0
    assert M.invariance_error(swapped, h_x, "max").item() == 0.0
    # first token: ||(3,4) - (1,0)|| / ||(1,0)|| = sqrt(4 + 16) / 1
    assert abs(M.invariance_error(swapped, h_x, "first").item() - 20**0.5) < 1e-12
    # last token: ||(1,0) - (3,4)|| / ||(3,4)|| = sqrt(20) / 5
    assert abs(M.invariance_error(swapped, h_x, "last").item() - 20**0.5 / 5) < 1e-12


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


def test_ratio_treats_zero_over_zero_as_no_difference():
    zero = torch.zeros(2, dtype=torch.float64)
    assert M.ratio(zero, zero).tolist() == [0.0, 0.0]
    assert M.ratio(torch.ones(1, dtype=torch.float64), torch.zeros(1, dtype=torch.float64)).item() == float("inf")
