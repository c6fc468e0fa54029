"""The linear head orderlab fits on a frozen encoder (models/hf/head_fit.py): it separates what is separable, it
lowers the cross-entropy, and it is the same head at any thread count."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from orderlab.models.hf.head_fit import fit_linear_head


def cross_entropy(weights: torch.Tensor, features: torch.Tensor, gold: torch.Tensor) -> float:
    logits = features.double() @ weights[:, :-1].T + weights[:, -1]
    return float(torch.nn.functional.cross_entropy(logits, gold))


def separable(seed: int, classes: int, count: int = 24, width: int = 6) -> tuple[torch.Tensor, torch.Tensor]:
    """Points around one centre per class, far apart for their spread: a linear map separates them."""
    generator = torch.Generator().manual_seed(seed)
    centres = 4 * torch.randn(classes, width, generator=generator, dtype=torch.float64)
    gold = torch.arange(count) % classes
    return centres[gold] + 0.1 * torch.randn(count, width, generator=generator, dtype=torch.float64), gold


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**16), st.integers(2, 4))
def test_separable_examples_are_all_predicted_right(seed: int, classes: int):
    features, gold = separable(seed, classes)
    weights = fit_linear_head(features, gold, classes, epochs=300, lr=0.5)
    predicted = (features @ weights[:, :-1].T + weights[:, -1]).argmax(dim=1)
    assert torch.equal(predicted, gold)


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**16))
def test_more_steps_never_raise_the_cross_entropy_from_zero_weights(seed: int):
    generator = torch.Generator().manual_seed(seed)
    features = torch.randn(16, 5, generator=generator, dtype=torch.float64)  # not separable: labels drawn apart
    gold = torch.randint(0, 3, (16,), generator=generator)
    losses = [cross_entropy(fit_linear_head(features, gold, 3, epochs, 0.1), features, gold) for epochs in (1, 10, 100)]
    assert torch.log(torch.tensor(3.0)).item() > losses[0] >= losses[1] >= losses[2]  # zero weights: log 3


def test_the_head_is_the_same_at_any_thread_count_and_leaves_the_count_alone():
    features, gold = separable(0, 2, count=40, width=384)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = fit_linear_head(features, gold, 2, epochs=50, lr=0.5)
        torch.set_num_threads(2)
        two = fit_linear_head(features, gold, 2, epochs=50, lr=0.5)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
    assert torch.equal(one, two)
