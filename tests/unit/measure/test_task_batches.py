"""A classifier's orders run in batches taken by token count (measure/task_measure.run_orders): each batch pads to
little more than its own sequences, and every example gets back its own orders' logits, in its own order."""

from __future__ import annotations

import numpy as np
import pytest

from orderlab.core.labelled_data import Example
from orderlab.measure.task_measure import Orders, run_orders

transformers = pytest.importorskip("transformers")

from orderlab.models.hf.classifier import ClassifierBackend  # noqa: E402
from orderlab.models.hf.loader import Seeded  # noqa: E402

WORDS = "a b c d e f g h i j".split()


@pytest.fixture(scope="module")
def backend() -> ClassifierBackend:
    return ClassifierBackend(Seeded(16, 2, 1, tuple(WORDS), 0), "bert", id2label=("no", "yes"))


def test_batches_are_taken_by_token_count_and_each_example_gets_its_own_logits(backend: ClassifierBackend):
    lengths = [6, 2, 9, 3, 5]  # examples of mixed lengths, in no order
    examples = [Example(f"examples[{i}]", WORDS[:n], None, None, None) for i, n in enumerate(lengths)]
    orders = [Orders([tuple(range(n)), tuple(reversed(range(n)))], [None, None]) for n in lengths]
    batches: list[list[int]] = []
    run = backend.run

    def recorded(encoded):
        batches.append([len(ids) - 2 for ids in encoded["input_ids"]])  # words: [CLS] and [SEP] aside
        return run(encoded)

    backend.run = recorded  # type: ignore[method-assign]
    try:
        found = run_orders(backend, examples, orders, 3, lambda _count: None)
    finally:
        del backend.run
    assert [n for batch in batches for n in batch] == sorted(n for n in lengths for _ in range(2))
    for example, order, logits in zip(examples, orders, found, strict=True):
        alone = backend.logits(*order.sequences(example)).numpy()  # each example's orders in a batch of their own
        np.testing.assert_allclose(logits, alone, rtol=1e-5, atol=1e-6)
