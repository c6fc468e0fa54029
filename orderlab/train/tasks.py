"""The synthetic word-order tasks a stack is trained on (train_spec.TASKS names them), drawn from a seeded generator.

A sentence is a row of word indices into the vocabulary word0..word{V-1}, whose vectors are the seeded word
vectors every spec uses (text.random_word_vector), so a spec's inputs written in those words are sentences of
the task. Each task says what its target is, and whether it is read out per slot or from the mean over slots:
a mean over slots is blind to order unless the stack put position into the states, which is what the
sentence-level tasks ask of an encoding. Each task also says its chance level (`chance`): the accuracy of the
best guess from what an order-blind stack sees. Never trains and never measures: train.py does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from orderlab.core.text import random_word_vector
from orderlab.spec.train_block import TrainSpec

IGNORED = -100  # cross_entropy's ignore_index: slots that carry no target


@dataclass(frozen=True)
class Batch:
    words: torch.Tensor  # (B, n) word indices
    targets: torch.Tensor  # (B,) for sentence-level tasks, (B, n) per slot (IGNORED where there is none)


CHANCE_SENTENCES = 2**15  # per length: a chance level's Monte Carlo standard error is below 0.5 / 2**7.5 < 0.003
CHANCE_SEED = 7  # the chance sentences' own generator, apart from any training or test set
COUNTING = 2**22  # (sentences x n x n) elements compared at once when counting words


@dataclass(frozen=True)
class Task:
    per_slot: bool  # read out at every slot; else from the mean over slots
    draw: Callable[[torch.Generator, int, int, int, tuple[int, int, int]], Batch]  # (gen, B, n, V, grammar)
    blind: Callable[[Batch, int], float]  # (sentences, V) -> mean accuracy of the best order-blind guess


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


# --- chance: the best an order-blind stack can do ---------------------------------------------------
# A bidirectional stack with no position is permutation-equivariant: slot i's state is a function of its own word
# and the bag (multiset) of the sentence's words, and the mean over slots a function of the bag alone. Given the
# bag, every arrangement of its words is equally likely, so each task's best order-blind guess follows from the
# word counts. Hand-worked: first_word on 2 words of V = 2: the bags {0,0} and {1,1} (1/4 each) name their word
# (right always), {0,1} (1/2) is right half the time, so chance = 1/4 + 1/4 + 1/2 * 1/2 = 0.75 = E[max count]/n.


def own_word_counts(words: torch.Tensor) -> torch.Tensor:
    """(B, n): at each slot, how many slots of its sentence hold the same word (chunked: B n^2 comparisons)."""
    rows = max(1, COUNTING // words.shape[1] ** 2)
    return torch.cat([(part[:, :, None] == part[:, None, :]).sum(-1) for part in torch.split(words, rows)])


def _most_frequent(batch: Batch, _: int) -> float:
    """first_word: the first word is any slot's word with equal odds, so name the most frequent: E[max count] / n."""
    n = batch.words.shape[1]
    return own_word_counts(batch.words).max(dim=1).values.double().mean().item() / n


def _every_slot(batch: Batch, _: int) -> float:
    """copy: a slot's own word is its target; no order needed."""
    return 1.0


def _reverse_blind(batch: Batch, _: int) -> float:
    """reverse: slot i's target is another slot's word (its own at the middle of an odd length). Summed over slots,
    the best guess (the bag's most frequent word, M times) scores M / n; for even n, when two words tie at M, a
    slot can leave its own word out of the count: M / (n - 1)."""
    n = batch.words.shape[1]
    counts = own_word_counts(batch.words)
    most = counts.max(dim=1).values.double()  # (B,) M
    tied = (counts == most[:, None]).sum(dim=1) > most  # more slots at M than one word's M
    per_sentence = torch.where(tied & (n % 2 == 0), most / max(n - 1, 1), most / n)
    return per_sentence.mean().item()


def _coin(batch: Batch, _: int) -> float:
    """order_pair: the bag holds each marker once, whatever their order: a coin flip."""
    return 0.5


def _most_frequent_noun(batch: Batch, vocabulary: int) -> float:
    """agent: the n-1 nouns fill the slots around the verb in any order, so name the most frequent noun:
    E[max noun count] / (n - 1)."""
    n = batch.words.shape[1]
    counts = own_word_counts(batch.words).masked_fill(batch.words < max(1, vocabulary // 4), 0)
    return counts.max(dim=1).values.double().mean().item() / (n - 1)


def _bigram(batch: Batch, vocabulary: int) -> float:
    """next_token: a causal stack sees the words before a slot, so no order-blind bound holds; chance is the best
    guess from the slot's own word alone (each word's most frequent successor over these sentences)."""
    scored = batch.targets != IGNORED
    pairs = batch.words[scored] * vocabulary + batch.targets[scored]  # (slots,) current word, next word
    found, counts = torch.unique(pairs, return_counts=True)
    best: dict[int, int] = {}
    for word, count in zip((found // vocabulary).tolist(), counts.tolist(), strict=True):
        best[word] = max(best.get(word, 0), count)
    return sum(best.values()) / max(int(scored.sum()), 1)


TASKS: dict[str, Task] = {
    "first_word": Task(False, _first_word, _most_frequent),
    "copy": Task(True, _copy, _every_slot),
    "reverse": Task(True, _reverse, _reverse_blind),
    "order_pair": Task(False, _order_pair, _coin),
    "agent": Task(False, _agent, _most_frequent_noun),
    "next_token": Task(True, _next_token, _bigram),
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

    def probe_set(self, count: int, n: int) -> torch.Tensor:
        """(count, n) word indices: the position probe's sentences of the task (decodability.from_task), from a
        generator of their own, apart from the training and test sentences."""
        generator = torch.Generator().manual_seed(self.seed * 1_000_003 + 500_009 + n)
        return self.task.draw(generator, count, n, self.spec.vocabulary, self.grammar).words

    def chance(self, n: int) -> float:
        """The task's chance accuracy at n words: its best order-blind guess, averaged over CHANCE_SENTENCES
        sentences of the task (a seeded Monte Carlo, the same for every spec of this task and vocabulary)."""
        generator = torch.Generator().manual_seed(CHANCE_SEED * 1_000_003 + n)
        batch = self.task.draw(generator, CHANCE_SENTENCES, n, self.spec.vocabulary, self.grammar)
        return self.task.blind(batch, self.spec.vocabulary)
