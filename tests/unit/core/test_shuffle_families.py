"""{local: K}, {ngram: N} and distinct: up_to (core/shuffles.py through core/permutations.py, as a run reads them):
every order a distinct other sentence that respects its family's definition, seeded and deterministic."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orderlab.core import permutations as perms

# Sentences of 2-8 words over a small vocabulary, so that many repeat a word; and sentences without repeats.
REPEATING = st.lists(st.sampled_from(["the", "a", "dog", "cat"]), min_size=2, max_size=7)
DISTINCT = st.integers(2, 7).map(lambda n: [f"w{i}" for i in range(n)])
WORDS = st.one_of(REPEATING, DISTINCT)


def valid(rule: dict[str, object], words: list[str]) -> bool:
    try:
        perms.validate_rule(rule, words)
    except ValueError:
        return False
    return True


def distinct_other_sentences(orders: list[perms.Permutation], words: list[str]) -> bool:
    sentences = [tuple(perms.apply(p, words)) for p in orders]
    return len(set(sentences)) == len(sentences) and tuple(words) not in sentences


def within_windows(p: perms.Permutation, k: int) -> bool:
    """Slot i holds a word from i's own window of k slots: the same i // k."""
    return all(source // k == slot // k for slot, source in enumerate(p))


def whole_units(p: perms.Permutation, n: int, size: int) -> bool:
    """p is a concatenation of the units [0..size-1], [size..2size-1], ..., each whole and in its own order."""
    units = [tuple(range(start, min(start + size, n))) for start in range(0, n, size)]
    at, seen = 0, []
    while at < n:
        unit = next((u for u in units if p[at : at + len(u)] == u and u not in seen), None)
        if unit is None:
            return False
        seen.append(unit)
        at += len(unit)
    return len(seen) == len(units)


# Brute force over n! orders: no per-example deadline (2 shared cores).
@settings(deadline=None, max_examples=60)
@given(WORDS, st.integers(2, 4))
def test_local_lists_every_distinct_sentence_whose_words_stay_in_their_windows(words, k):
    rule = {"local": k}
    if not valid(rule, words):
        return
    orders = perms.generate(rule, words)
    assert all(within_windows(p, k) for p in orders)
    assert distinct_other_sentences(orders, words)
    # Every sentence within the windows, by brute force over all n! orders, is among them.
    expected = {tuple(perms.apply(p, words)) for p in itertools.permutations(range(len(words))) if within_windows(p, k)}
    assert {tuple(perms.apply(p, words)) for p in orders} == expected - {tuple(words)}
    assert perms.count(rule, words) == len(orders)


@settings(deadline=None, max_examples=60)
@given(WORDS, st.integers(1, 3))
def test_ngram_lists_every_distinct_sentence_of_whole_units(words, size):
    rule = {"ngram": size}
    if not valid(rule, words):
        return
    orders = perms.generate(rule, words)
    n = len(words)
    assert all(whole_units(p, n, size) for p in orders)
    assert distinct_other_sentences(orders, words)
    expected = {tuple(perms.apply(p, words)) for p in itertools.permutations(range(n)) if whole_units(p, n, size)}
    assert {tuple(perms.apply(p, words)) for p in orders} == expected - {tuple(words)}
    assert perms.count(rule, words) == len(orders)


@settings(deadline=None)
@given(WORDS, st.sampled_from(["local", "ngram"]), st.integers(2, 3), st.integers(1, 30), st.integers(0, 5))
def test_drawn_family_orders_are_distinct_respect_the_family_and_repeat_with_the_seed(words, kind, size, k, seed):
    rule: dict[str, object] = {kind: size, "random": k, "distinct": "up_to"}
    if not valid(rule, words):
        return
    orders = perms.generate(rule, words, seed)
    n = len(words)
    respects = (lambda p: within_windows(p, size)) if kind == "local" else (lambda p: whole_units(p, n, size))
    assert all(respects(p) for p in orders)
    assert distinct_other_sentences(orders, words)
    listed = perms.count({kind: size}, words)
    assert len(orders) == min(k, listed) == perms.count(rule, words)
    assert perms.generate(rule, words, seed) == orders


@settings(deadline=None)
@given(WORDS, st.integers(1, 200), st.integers(0, 5))
def test_random_up_to_gives_as_many_distinct_other_sentences_as_exist_up_to_k(words, k, seed):
    rule = {"random": k, "distinct": "up_to"}
    others = perms.sentences(words) - 1
    if others == 0:
        with pytest.raises(ValueError, match="only the sentence itself"):
            perms.validate_rule(rule, words)
        return
    orders = perms.generate(rule, words, seed)
    assert len(orders) == min(k, others) == perms.count(rule, words)
    assert distinct_other_sentences(orders, words)


def test_random_100_on_five_words_with_a_repeat_is_refused_exactly_and_taken_up_to():
    words = "the cat chased the dog".split()
    with pytest.raises(ValueError, match=r"at most 59 \(or distinct: up_to"):
        perms.validate_rule({"random": 100}, words)
    orders = perms.generate({"random": 100, "distinct": "up_to"}, words, seed=3)
    assert len(orders) == 59  # 5! / 2! = 60 sentences, less the original


def test_up_to_draws_the_same_orders_as_exactly_where_there_are_enough():
    words = "a b c d e f".split()
    assert perms.generate({"random": 10, "distinct": "up_to"}, words, 7) == perms.generate({"random": 10}, words, 7)


def test_local_windows_of_three_on_seven_words_by_hand():
    # windows [0 1 2] [3 4 5] [6]: 3! * 3! * 1! = 36 orders, 35 besides the original
    words = "a b c d e f g".split()
    orders = perms.generate({"local": 3}, words)
    assert len(orders) == 35
    assert (1, 0, 2, 3, 4, 5, 6) in orders and (0, 1, 2, 3, 4, 6, 5) not in orders


def test_ngram_bigrams_of_five_words_by_hand():
    # units (0 1) (2 3) (4): 3! = 6 orders, 5 besides the original
    orders = perms.generate({"ngram": 2}, "a b c d e".split())
    assert sorted(orders) == [(0, 1, 4, 2, 3), (2, 3, 0, 1, 4), (2, 3, 4, 0, 1), (4, 0, 1, 2, 3), (4, 2, 3, 0, 1)]


def test_ngram_with_a_short_unit_counts_sentences_two_arrangements_share():
    # units (a a) (a): "a a | a" and "a | a a" are one sentence, the original: nothing to measure
    with pytest.raises(ValueError, match="only the sentence itself"):
        perms.validate_rule({"ngram": 2}, ["a", "a", "a"])


def test_a_family_listed_past_nine_factorial_orders_asks_for_draws():
    words = [f"w{i}" for i in range(40)]
    with pytest.raises(ValueError, match=r"past the limit of 362,880; expected draws, like \{local: 8, random: 100\}"):
        perms.validate_rule({"local": 8}, words)  # 8!^5
    perms.validate_rule({"local": 8, "random": 100}, words)
    assert len(perms.generate({"local": 8, "random": 100}, words, 1)) == 100
    assert math.factorial(8) ** 5 > 362_880
