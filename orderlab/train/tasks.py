"""The synthetic word-order tasks a stack is trained on (train_spec.TASKS names them), drawn from a seeded generator.

A sentence is a row of word indices into the vocabulary word0..word{V-1}, whose vectors are the seeded word
vectors every spec uses (text.random_word_vector), so a spec's inputs written in those words are sentences of
the task. Each task says what its target is, and whether it is read out per slot or from the mean over slots:
a mean over slots is blind to order unless the stack put position into the states, which is what the
sentence-level tasks ask of an encoding. Never trains and never measures: train.py does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from orderlab.spec.text import random_word_vector
from orderlab.spec.train_block import TrainSpec

IGNORED = -100  # cross_entropy's ignore_index: slots that carry no target


@dataclass(frozen=True)
class Batch:
    words: torch.Tensor  # (B, n) word indices
    targets: torch.Tensor  # (B,) for sentence-level tasks, (B, n) per slot (IGNORED where there is none)


@dataclass(frozen=True)
class Task:
    per_slot: bool  # read out at every slot; else from the mean over slots
    draw: Callable[[torch.Generator, int, int, int, tuple[int, int, int]], Batch]  # (gen, B, n, V, grammar)


def vocabulary_vectors(vocabulary: int, seed: int, d_model: int) -> torch.Tensor:
    """(V, d) float64: the seeded vectors of word0..word{V-1}, the words a spec's inputs would use."""
    return torch.from_numpy(np.stack([random_word_vector(f"word{k}", seed, d_model) for k in range(vocabulary)]))


def _uniform(generator: torch.Generator, batch: int, n: int, low: int, high: int) -> torch.Tensor:
    return torch.randint(low, high, (batch, n), generator=generator)


def _first_word(generator: torch.Generator, batch: int, n: int, vocabulary: int, _: tuple[int, int, int]) -> Batch:
    words = _uniform(generator, batch, n, 0, vocabulary)
    return Batch(words, words[:, 0])


def _copy(generator: torch.Generator, batch: int, n: int, vocabulary: int, _: tuple[int, int, int]) -> Batch:
    words = _uniform(generator, batch, n, 0, vocabulary)
    return Batch(words, words)


def _reverse(generator: torch.Generator, batch: int, n: int, vocabulary: int, _: tuple[int, int, int]) -> Batch:
    words = _uniform(generator, batch, n, 0, vocabulary)
    return Batch(words, words.flip(1))


def _order_pair(generator: torch.Generator, batch: int, n: int, vocabulary: int, _: tuple[int, int, int]) -> Batch:
    """Markers word0 and word1 at two random slots among fillers word2..: is word0 first? (0: no, 1: yes)."""
    words = _uniform(generator, batch, n, 2, vocabulary)
    slots = torch.rand(batch, n, generator=generator).argsort(dim=1)[:, :2]  # (B, 2) distinct slots
    rows = torch.arange(batch)
    words[rows, slots[:, 0]], words[rows, slots[:, 1]] = 0, 1
    return Batch(words, (slots[:, 0] < slots[:, 1]).long())


def _agent(generator: torch.Generator, batch: int, n: int, vocabulary: int, _: tuple[int, int, int]) -> Batch:
    """Nouns (the upper three quarters of the words) around one verb at a slot 1..n-2: the agent is just before it."""
    verbs = max(1, vocabulary // 4)
    words = _uniform(generator, batch, n, verbs, vocabulary)
    at = torch.randint(1, n - 1, (batch,), generator=generator)  # (B,)
    rows = torch.arange(batch)
    words[rows, at] = torch.randint(0, verbs, (batch,), generator=generator)
    return Batch(words, words[rows, at - 1])


def _next_token(
    generator: torch.Generator, batch: int, n: int, vocabulary: int, grammar: tuple[int, int, int]
) -> Batch:
    """w_i = (a w_{i-1} + b w_{i-2} + c) mod V from two random words; slot i predicts w_{i+1} from slot 1 on."""
    a, b, c = grammar
    words = _uniform(generator, batch, n, 0, vocabulary)
    for i in range(2, n):
        words[:, i] = (a * words[:, i - 1] + b * words[:, i - 2] + c) % vocabulary
    targets = torch.full((batch, n), IGNORED)
    targets[:, 1 : n - 1] = words[:, 2:]
    return Batch(words, targets)


TASKS: dict[str, Task] = {
    "first_word": Task(False, _first_word),
    "copy": Task(True, _copy),
    "reverse": Task(True, _reverse),
    "order_pair": Task(False, _order_pair),
    "agent": Task(False, _agent),
    "next_token": Task(True, _next_token),
}


def grammar(seed: int, vocabulary: int) -> tuple[int, int, int]:
    """next_token's seeded rule (a, b, c), a and b non-zero so both earlier words matter."""
    generator = torch.Generator().manual_seed(seed)
    a, b = (int(x) for x in torch.randint(1, vocabulary, (2,), generator=generator))
    return a, b, int(torch.randint(0, vocabulary, (1,), generator=generator))


class TaskData:
    """A task's sentences for one training run: a seeded stream of training batches and fixed test sets."""

    def __init__(self, train: TrainSpec, seed: int):
        self.spec, self.task = train, TASKS[train.task]
        self.grammar = grammar(seed, train.vocabulary)
        self.generator = torch.Generator().manual_seed(seed)
        self.seed = seed

    def training_batch(self) -> Batch:
        """The next batch: its length drawn uniformly from train_lengths, then its sentences."""
        low, high = self.spec.train_lengths
        n = int(torch.randint(low, high + 1, (1,), generator=self.generator))
        return self.task.draw(self.generator, self.spec.batch, n, self.spec.vocabulary, self.grammar)

    def test_set(self, n: int) -> Batch:
        """test_sentences of n words, from a generator of their own (the same whatever the training did)."""
        generator = torch.Generator().manual_seed(self.seed * 1_000_003 + n + 1)
        return self.task.draw(generator, self.spec.test_sentences, n, self.spec.vocabulary, self.grammar)
