"""The lazy permutation stream: every distinct order once, in CSV order, chunked without splitting duplicates."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orderlab.core import permutations as perms
from orderlab.vocabulary.exactsum import ExactSum

NAMED_RULES = ["identity", "reverse", "swaps", "shifts", "prefixes", "all", {"random": 5}]
# Sentences of 4-7 words over a small vocabulary, so that most repeat a word.
REPEATING = st.lists(st.sampled_from(["the", "a", "dog", "cat"]), min_size=4, max_size=7)


def distinct_words(n: int) -> list[str]:
    return [f"w{i}" for i in range(n)]


@given(st.integers(min_value=1, max_value=7))
def test_all_covers_each_permutation_exactly_once_in_label_order(n):
    stream = list(perms.in_label_order("all", distinct_words(n)))
    assert len(stream) == len(set(stream)) == math.factorial(n) == perms.count("all", distinct_words(n))
    assert set(stream) == set(itertools.permutations(range(n)))
    assert [perms.label(p) for p in stream] == sorted(perms.label(p) for p in stream)


def test_all_is_lazy_for_nine_tokens():
    stream = perms.iterate("all", distinct_words(9))
    assert not isinstance(stream, list)
    assert next(stream) == tuple(range(9))


@given(st.sampled_from(NAMED_RULES), st.one_of(st.integers(4, 7).map(distinct_words), REPEATING))
def test_count_matches_what_the_rule_generates(rule, words):
    if perms.count("all", words) <= 6 and isinstance(rule, dict):
        return  # fewer other sentences than the rule draws: validation refuses it
    assert perms.count(rule, words) == len(perms.generate(rule, words)) == len(list(perms.in_label_order(rule, words)))
    assert sorted(perms.in_label_order(rule, words)) == sorted(perms.generate(rule, words))
    labels = [perms.label(p) for p in perms.in_label_order(rule, words)]
    assert labels == sorted(labels)


def test_all_of_the_cat_chased_the_dog_is_its_60_distinct_sentences():
    words = "the cat chased the dog".split()
    orders = list(perms.in_label_order_range(["all"], words))
    sentences = {" ".join(perms.apply(p, words)) for p in orders}
    assert len(orders) == len(sentences) == perms.count("all", words) == 60
    assert orders[0] == (0, 1, 2, 3, 4)  # the identity, as itself, first
    assert (3, 1, 2, 0, 4) not in orders  # the two "the" swapped: the sentence itself again


@given(st.sampled_from(NAMED_RULES), REPEATING, st.integers(0, 3))
def test_a_named_rule_names_distinct_sentences_and_the_original_only_as_the_identity(rule, words, seed):
    if isinstance(rule, dict) and perms.count("all", words) <= 5:
        return
    orders = perms.generate(rule, words, seed)
    sentences = [tuple(perms.apply(p, words)) for p in orders]
    assert len(set(sentences)) == len(sentences)
    assert all(p == tuple(range(len(words))) for p, s in zip(orders, sentences, strict=True) if list(s) == words)


@settings(deadline=None)
@given(st.sampled_from(["all", "prefixes"]), REPEATING, st.data())
def test_a_range_of_distinct_orders_starts_anywhere(rule, words, data):
    """Shards cut a sentence's orders by index: the ranges tile the distinct orders whatever the repeats."""
    whole = list(perms.in_label_order_range([rule], words))
    cut = data.draw(st.integers(0, len(whole)))
    assert (
        list(perms.in_label_order_range([rule], words, 0, 0, cut))
        + list(perms.in_label_order_range([rule], words, 0, cut))
        == whole
    )
    first: dict[tuple[str, ...], tuple[int, ...]] = {}  # each sentence's first order in label order, by brute force
    for q in itertools.permutations(range(len(words))):
        if rule == "all" or q[-1] == len(words) - 1:
            first.setdefault(tuple(perms.apply(q, words)), q)
    assert whole == sorted(first.values())


def test_an_explicit_list_may_not_name_one_reordering_twice():
    words = "the cat chased the dog".split()
    perms.validate_rule([[0, 1, 2, 3, 4], [3, 1, 2, 0, 4]], words)  # the sentence itself twice: allowed, on purpose
    with pytest.raises(ValueError, match="gives 'the dog chased the cat', as entry 0 does"):
        perms.validate_rule([[0, 4, 2, 3, 1], [3, 4, 2, 0, 1]], words)


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
