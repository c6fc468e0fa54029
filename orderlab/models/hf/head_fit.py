"""A linear classification head fitted on a frozen encoder's pooled output, so that a packaged encoder without a
trained head (all-MiniLM-L6-v2) can be measured as a classifier.

The fit is multinomial logistic regression by full-batch gradient descent on the mean cross-entropy, from zero
weights, in float64: no random draw and no order of minibatches, so the same features give the same head on every
run; a float32 encoder's features move only by their round-off from one thread count to another, and the head with
them. The fit itself runs on one thread: its sums then add in one order at any thread count, and matrices this small
only lose time to a thread pool (300 steps: 0.02 s on one thread, seconds on two busy cores).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch


@dataclass(frozen=True)
class HeadToFit:
    """A checkpoint folder whose classifier layer is fitted on labelled examples (their words and gold label ids)."""

    folder: Path
    labels: tuple[str, ...]  # the head's id2label, in id order
    texts: Sequence[Sequence[str]]
    pairs: Sequence[Sequence[str]] | None
    gold: Sequence[int]
    epochs: int
    lr: float
    batch: int


def fit_linear_head(features: torch.Tensor, gold: torch.Tensor, classes: int, epochs: int, lr: float) -> torch.Tensor:
    """(classes, d + 1) float64: the weights and, last, the bias of the linear map whose softmax minimises the mean
    cross-entropy of `features` (n, d) against `gold` (n,), after `epochs` full-batch steps of size `lr` from zero."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _descend(features, gold, classes, epochs, lr)
    finally:
        torch.set_num_threads(threads)


def _descend(features: torch.Tensor, gold: torch.Tensor, classes: int, epochs: int, lr: float) -> torch.Tensor:
    inputs = torch.cat([features.double(), torch.ones(len(features), 1, dtype=torch.float64)], dim=1)
    target = torch.nn.functional.one_hot(gold.long(), classes).double()
    weights = torch.zeros(classes, inputs.shape[1], dtype=torch.float64)
    for _ in range(epochs):
        error = torch.softmax(inputs @ weights.T, dim=1) - target  # the cross-entropy's gradient in the logits
        weights -= lr * (error.T @ inputs) / len(inputs)
    return weights
