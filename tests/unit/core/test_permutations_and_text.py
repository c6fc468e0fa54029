"""Permutation generators and word vectors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from orderlab.core import permutations as P
from orderlab.core.text import occurrence_matching, random_word_vector, sentence_vectors, tokenize


@pytest.mark.parametrize(
    ("rule", "count"), [("identity", 1), ("reverse", 1), ("all", 24), ("swaps", 3), ("shifts", 3), ({"random": 7}, 7)]
)
def test_each_rule_gives_distinct_valid_permutations(rule, count):
    generated = P.generate(rule, ["a", "b", "c", "d"], seed=3)
    assert len(generated) == count == len(set(generated))
    assert all(sorted(p) == [0, 1, 2, 3] for p in generated)


def test_reverse_of_dog_bites_man_is_man_bites_dog():
    (p,) = P.generate("reverse", ["dog", "bites", "man"])
    assert P.apply(p, ["dog", "bites", "man"]) == ["man", "bites", "dog"]


def test_random_permutations_are_seeded_and_exclude_identity():
    first, again, other = (P.generate({"random": 5}, list("abcde"), seed=s) for s in (1, 1, 2))
    assert first == again and first != other
    assert (0, 1, 2, 3, 4) not in first


def test_random_can_ask_for_every_non_identity_permutation():
    assert len(set(P.generate({"random": math.factorial(4) - 1}, list("abcd"), seed=0))) == 23


def test_shifts_and_swaps_are_what_they_say():
    assert P.generate("shifts", list("abc")) == [(1, 2, 0), (2, 0, 1)]
    assert P.generate("swaps", list("abc")) == [(1, 0, 2), (0, 2, 1)]


def test_rules_leave_out_orders_that_give_a_sentence_again():
    """Swapping two copies of a word, or shifting a periodic sentence by its period, gives no new sentence."""
    assert P.generate("swaps", ["the", "the", "dog"]) == [(0, 2, 1)]
    assert P.generate("shifts", ["a", "b", "a", "b"]) == [(1, 2, 3, 0)]
    assert P.count("shifts", ["a", "b", "a", "b"]) == 1 and P.count("swaps", ["the", "the", "dog"]) == 1
    with pytest.raises(ValueError, match="gives only the sentence itself"):
        P.validate_rule("reverse", ["a", "b", "a"])


def test_word_vector_depends_only_on_word_seed_and_width():
    alone = sentence_vectors(["dog"], 16, seed=4)[0]
    in_company = sentence_vectors(["the", "dog", "barks"], 16, seed=4)[1]
    assert np.array_equal(alone, in_company)
    assert np.array_equal(alone, random_word_vector("dog", 4, 16))
    assert not np.array_equal(alone, random_word_vector("dog", 5, 16))
    assert not np.array_equal(alone, random_word_vector("cat", 4, 16))


def test_tokenize_splits_on_white_space_and_can_lowercase():
    assert tokenize("  The  dog\tbites ") == ["The", "dog", "bites"]
    assert tokenize("The Dog", lowercase=True) == ["the", "dog"]


def test_repeated_words_are_matched_by_occurrence():
    original = "the cat chased the dog".split()
    assert occurrence_matching(original, "the dog chased the cat".split()) == [0, 4, 2, 3, 1]
    assert occurrence_matching(original, original) == [0, 1, 2, 3, 4]
    assert occurrence_matching(original, "a cat".split()) is None


@given(st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=8), st.randoms())
def test_occurrence_matching_maps_each_word_to_itself(words, rng):
    shuffled = list(words)
    rng.shuffle(shuffled)
    matching = occurrence_matching(words, shuffled)
    assert sorted(matching) == list(range(len(words)))
    assert [words[m] for m in matching] == shuffled
