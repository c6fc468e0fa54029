"""Whole words move as groups of sub-tokens; specials stay put; word states average their sub-tokens."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from orderlab.models.hf.grouping import WordTokens, spans_from_word_ids

pytestmark = pytest.mark.slow


def tokens_with_lengths(lengths: list[int]) -> WordTokens:
    """[CLS]=100, word w's k-th sub-token = 10 * w + k, [SEP]=101."""
    ids, spans, start = [100], [], 1
    for word, length in enumerate(lengths):
        ids += [10 * word + k for k in range(length)]
        spans.append((start, start + length))
        start += length
    return WordTokens((*ids, 101), tuple(spans))


@st.composite
def sentences_and_permutations(draw):
    lengths = draw(st.lists(st.integers(1, 4), min_size=1, max_size=7))
    p = draw(st.permutations(range(len(lengths))))
    return lengths, tuple(p)


@given(sentences_and_permutations())
def test_word_permutation_moves_sub_tokens_together_and_keeps_specials(case):
    lengths, p = case
    tokens = tokens_with_lengths(lengths)
    moved = tokens.permuted(p)
    assert sorted(tokens.token_permutation(p)) == list(range(tokens.n_tokens))
    assert moved.ids[0] == 100 and moved.ids[-1] == 101
    expected = [100] + [10 * word + k for word in p for k in range(lengths[word])] + [101]
    assert list(moved.ids) == expected
    for slot, word in enumerate(p):  # slot i of the new sentence holds word p[i], sub-tokens in order
        start, end = moved.spans[slot]
        assert list(moved.ids[start:end]) == [10 * word + k for k in range(lengths[word])]


@given(sentences_and_permutations())
def test_word_pooling_averages_each_words_own_sub_tokens(case):
    lengths, p = case
    moved = tokens_with_lengths(lengths).permuted(p)
    pooled = moved.pooling() @ np.array(moved.ids, dtype=float)  # mean sub-token id per word
    expected = [np.mean([10 * word + k for k in range(lengths[word])]) for word in p]
    np.testing.assert_allclose(pooled, expected)


def test_spans_from_word_ids_groups_sub_tokens_by_word():
    # [CLS] the un ##believ ##able dog [SEP]
    assert spans_from_word_ids([None, 0, 1, 1, 1, 2, None], 3) == ((1, 2), (2, 5), (5, 6))


def test_spans_from_word_ids_refuses_a_word_without_tokens():
    with pytest.raises(ValueError, match="word 1 has no tokens"):
        spans_from_word_ids([None, 0, 2, None], 3)


def test_the_models_tokenizer_splits_a_long_word_and_it_moves_whole(backend):
    words = ["the", "grumpy", "postman", "outperformed", "dogs."]
    tokens = backend.word_tokens(words)
    pieces = backend.tokenizer.convert_ids_to_tokens(list(tokens.ids))
    assert pieces[0] == "[CLS]" and pieces[-1] == "[SEP]"
    start, end = tokens.spans[3]
    assert pieces[start:end] == ["out", "##per", "##formed"]
    reversed_words = tokens.permuted((4, 3, 2, 1, 0))
    retokenized = backend.word_tokens(words[::-1])
    assert reversed_words == retokenized  # moving groups = tokenizing the reordered sentence
