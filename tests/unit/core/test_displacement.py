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


def trees(n: int) -> st.SearchStrategy[list[int]]:
    """CoNLL heads of a random tree over n words: word order[0] is the root, each later word hangs from an earlier."""
    return st.permutations(list(range(n))).flatmap(
        lambda order: st.tuples(*(st.integers(0, k - 1) for k in range(1, n))).map(
            lambda parents: _heads(order, parents)
        )
    )


def _heads(order: list[int], parents: tuple[int, ...]) -> list[int]:
    heads = [0] * len(order)
    for k, parent in enumerate(parents, start=1):
        heads[order[k]] = order[parent] + 1
    return heads


TREES = st.integers(1, 8).flatmap(lambda n: st.tuples(st.permutations(list(range(n))), trees(n)))


@pytest.mark.parametrize(
    ("p", "heads", "expected"),
    [
        # "dog bites man", heads [2, 0, 2]: arcs dog<-bites (length 1), man<-bites (1)
        ((0, 1, 2), [2, 0, 2], 0.0),  # the original
        ((2, 1, 0), [2, 0, 2], 0.0),  # "man bites dog": both arcs still 1 long
        ((1, 0, 2), [2, 0, 2], 0.5),  # "bites dog man": dog 1 from bites, man 2 from it: (0 + 1) / 2
        ((0, 2, 1), [2, 0, 2], 0.5),  # "dog man bites": dog 2 from bites, man 1: (1 + 0) / 2
        ((1, 2, 0), [0, 1, 2], 0.5),  # a chain a <- b <- c as "b c a": b-a now 2 long (was 1), c-b 1: (1 + 0) / 2
    ],
)
def test_dependency_displacement_by_hand(p, heads, expected):
    assert displacement.dependency_displacement(p, heads) == pytest.approx(expected)


@given(TREES)
def test_dependency_displacement_is_the_naive_mean_change_of_arc_lengths(case):
    p, heads = case
    where = {word: slot for slot, word in enumerate(p)}
    arcs = [(d, h - 1) for d, h in enumerate(heads) if h]
    naive = [abs(abs(where[h] - where[d]) - abs(h - d)) for d, h in arcs]
    value = displacement.dependency_displacement(p, heads)
    assert value == pytest.approx(sum(naive) / len(naive) if naive else 0.0)
    assert value >= 0 and value <= max(len(p) - 2, 0)  # an arc's length goes from 1..n-1 to 1..n-1
    assert displacement.dependency_displacement(tuple(reversed(p)), heads) == pytest.approx(value)  # mirror: same
    assert displacement.parse_problem(heads, len(p)) is None


@pytest.mark.parametrize(
    ("heads", "problem"),
    [
        ([2, 0], None),
        ([2, 0, 2, 1], "4 heads for 3 words"),
        ([2, 0, 4], "a head outside 0..3"),
        ([0, 0, 2], "2 roots"),
        ([2, 3, 2], "0 roots"),
        ([2, 1, 0], "word 1 never reaches the root (a cycle)"),
    ],
)
def test_a_parse_that_is_no_tree_is_named(heads, problem):
    words = 2 if heads == [2, 0] else 3
    found = displacement.parse_problem(heads, words)
    assert (found is None) if problem is None else (problem in found)
