"""Displacement measures (core/displacement.py) against hand computations and naive definitions."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orderlab.core import displacement

PERMUTATIONS = st.integers(0, 9).flatmap(lambda n: st.permutations(list(range(n))))


@pytest.mark.parametrize(
    ("p", "mean", "tau", "idc"),
    [
        ((0, 1, 2), 0.0, 0, 0.0),  # the original
        ((2, 1, 0), 4 / 3, 3, 4 / 9),  # |2-0| + |1-1| + |0-2| = 4 over 3 words; all 3 pairs flipped; 4/3 / 3
        ((1, 0, 2, 3), 0.5, 1, 0.125),  # one adjacent swap: 2 / 4 words; 1 pair; 0.5 / 4
        ((1, 2, 3, 0), 1.5, 3, 0.375),  # a shift: 1+1+1+3 = 6 / 4; (1,0) (2,0) (3,0); 1.5 / 4
        ((3, 4, 0, 1, 2), 2.4, 6, 0.48),  # bigram moved to the front: 3+3+2+2+2 = 12 / 5; 2 x 3 pairs; 2.4 / 5
    ],
)
def test_measures_by_hand(p, mean, tau, idc):
    assert displacement.measures(p) == (pytest.approx(mean), tau, pytest.approx(idc))


@given(PERMUTATIONS)
def test_kendall_tau_distance_is_the_count_of_flipped_pairs(p):
    naive = sum(p[i] > p[j] for i, j in itertools.combinations(range(len(p)), 2))
    assert displacement.kendall_tau_distance(p) == naive


@given(PERMUTATIONS)
def test_measures_are_zero_only_for_the_original_and_bounded_by_the_reversal(p):
    n = len(p)
    mean, tau, idc = displacement.measures(p)
    original = list(p) == list(range(n))
    assert (mean == 0) == original and (tau == 0) == original
    assert tau <= n * (n - 1) // 2
    assert mean <= displacement.mean_abs_displacement(tuple(reversed(range(n)))) + 1e-12  # reversal moves most
    assert idc == pytest.approx(mean / n if n else 0.0)
