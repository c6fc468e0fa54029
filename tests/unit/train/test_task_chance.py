"""Each trained task's chance level (train/tasks.py): the best accuracy of a guess from what an order-blind stack sees.

Checked against brute force: every sentence of a small task, grouped by what an order-blind read-out sees (the
bag of words for a mean over slots; the bag and the slot's own word for a per-slot read-out), each group's best
single answer counted. The Monte Carlo over CHANCE_SENTENCES sentences must land within its error of that.
"""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from orderlab.spec.train_block import TrainSpec
from orderlab.train.tasks import CHANCE_SENTENCES, IGNORED, TASKS, Batch, TaskData


def every_sentence(task: str, n: int, vocabulary: int) -> Batch:
    """All sentences of first_word or reverse (every word sequence), or of agent (every verb slot, verb and nouns),
    each as likely as the task draws it."""
    if task != "agent":
        words = torch.tensor(list(itertools.product(range(vocabulary), repeat=n)))
        return Batch(words, words[:, 0] if task == "first_word" else words.flip(1))
    verbs = max(1, vocabulary // 4)
    rows, targets = [], []
    for at, verb in itertools.product(range(1, n - 1), range(verbs)):
        for nouns in itertools.product(range(verbs, vocabulary), repeat=n - 1):
            rows.append([*nouns[:at], verb, *nouns[at:]])
            targets.append(nouns[at - 1])
    return Batch(torch.tensor(rows), torch.tensor(targets))


def brute_force_chance(batch: Batch, per_slot: bool) -> float:
    """Group what an order-blind stack sees, answer each group's most common target: the best it can score."""
    answers: dict[tuple[object, ...], Counter[int]] = defaultdict(Counter)
    for words, targets in zip(batch.words.tolist(), batch.targets.tolist(), strict=True):
        bag = tuple(sorted(words))
        if not per_slot:
            answers[bag][targets] += 1
            continue
        for word, target in zip(words, targets, strict=True):
            if target != IGNORED:
                answers[(bag, word)][target] += 1
    right = sum(max(counts.values()) for counts in answers.values())
    return right / sum(sum(counts.values()) for counts in answers.values())


@settings(max_examples=25, deadline=None)
@given(task=st.sampled_from(["first_word", "reverse", "agent"]), n=st.integers(3, 6), vocabulary=st.integers(4, 6))
def test_the_order_blind_bound_is_what_brute_force_finds(task, n, vocabulary):
    if vocabulary**n > 20_000:
        n = 3
    batch = every_sentence(task, n, vocabulary)
    exact = brute_force_chance(batch, TASKS[task].per_slot)
    assert TASKS[task].blind(batch, vocabulary) == pytest.approx(exact, abs=1e-12)


def test_first_word_chance_by_hand():
    # 2 words of V = 2: {0,0} and {1,1} (1/4 each) name their word, {0,1} (1/2) guesses right half the time:
    # 1/4 + 1/4 + 1/2 * 1/2 = 0.75 = E[max count] / n = (2 * 1/2 + 1 * 1/2) / 2.
    batch = every_sentence("first_word", 2, 2)
    assert TASKS["first_word"].blind(batch, 2) == 0.75 == brute_force_chance(batch, per_slot=False)


@pytest.mark.parametrize(
    ("task", "n", "exact"),
    [
        ("first_word", 4, None),
        ("reverse", 4, None),
        ("reverse", 5, None),
        ("agent", 4, None),
        ("order_pair", 6, 0.5),  # the bag holds each marker once whatever their order
        ("copy", 6, 1.0),  # a slot's own word is its target
    ],
)
def test_the_monte_carlo_chance_lands_within_its_error(task, n, exact):
    vocabulary = 8
    if exact is None:
        exact = brute_force_chance(every_sentence(task, n, vocabulary), TASKS[task].per_slot)
    estimate = TaskData(TrainSpec(task=task, vocabulary=vocabulary), seed=0).chance(n)
    assert estimate == pytest.approx(exact, abs=4 * 0.5 / CHANCE_SENTENCES**0.5)


def test_first_word_chance_is_not_one_over_the_vocabulary():
    # issue 24: with 16 words, naming the sentence's most frequent word scores E[max count] / n, far above 1/16
    data = TaskData(TrainSpec(task="first_word", vocabulary=16), seed=0)
    assert data.chance(4) == pytest.approx(0.34, abs=0.005)
    assert data.chance(8) == pytest.approx(0.26, abs=0.005)


def test_next_token_chance_is_the_best_guess_from_the_current_word():
    data = TaskData(TrainSpec(task="next_token", vocabulary=8), seed=0)
    batch = data.task.draw(torch.Generator().manual_seed(1), 4096, 6, 8, data.grammar)
    pairs = Counter()
    for words, targets in zip(batch.words.tolist(), batch.targets.tolist(), strict=True):
        pairs.update((w, t) for w, t in zip(words, targets, strict=True) if t != IGNORED)
    best = defaultdict(int)
    for (word, _), count in pairs.items():
        best[word] = max(best[word], count)
    assert TASKS["next_token"].blind(batch, 8) == pytest.approx(sum(best.values()) / sum(pairs.values()))
