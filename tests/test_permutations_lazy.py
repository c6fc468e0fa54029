"""The lazy permutation stream: every permutation once, in CSV order, chunked without splitting duplicates."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from orderlab.core import permutations as perms
from orderlab.measure.exactsum import ExactSum


@given(st.integers(min_value=1, max_value=7))
def test_all_covers_each_permutation_exactly_once_in_label_order(n):
    stream = list(perms.in_label_order("all", n))
    assert len(stream) == len(set(stream)) == math.factorial(n) == perms.count("all", n)
    assert set(stream) == set(itertools.permutations(range(n)))
    assert [perms.label(p) for p in stream] == sorted(perms.label(p) for p in stream)


def test_all_is_lazy_for_nine_tokens():
    stream = perms.iterate("all", 9)
    assert not isinstance(stream, list)
    assert next(stream) == tuple(range(9))


@given(st.sampled_from(["identity", "reverse", "swaps", "shifts", "prefixes", "all", {"random": 5}]), st.integers(4, 7))
def test_count_matches_what_the_rule_generates(rule, n):
    assert perms.count(rule, n) == len(perms.generate(rule, n)) == len(list(perms.in_label_order(rule, n)))
    assert sorted(perms.in_label_order(rule, n)) == sorted(perms.generate(rule, n))
    labels = [perms.label(p) for p in perms.in_label_order(rule, n)]
    assert labels == sorted(labels)


@given(st.lists(st.integers(0, 5), max_size=40), st.integers(1, 8))
def test_chunks_keep_order_and_never_split_a_run_of_equal_permutations(values, size):
    stream = [(v,) for v in sorted(values)]
    chunks = list(perms.chunks(iter(stream), size))
    assert [p for chunk in chunks for p in chunk] == stream
    for before, after in itertools.pairwise(chunks):
        assert len(before) >= size and before[-1] != after[0]


@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=60), st.integers(1, 60))
def test_exact_sum_does_not_depend_on_how_values_are_split(values, cut):
    whole, parts = ExactSum(), ExactSum()
    whole.add(np.array(values))
    parts.add(np.array(values[:cut]))
    parts.add(np.array(values[cut:]))
    assert whole.total() == parts.total() == sum(map(Fraction, values))
    if values:
        assert whole.mean(len(values)) == float(sum(map(Fraction, values)) / len(values))
