"""Pooling token states into the vectors an adapter's pass carries: over a sentence's words (mean, max, first,
last), a pretrained model's [CLS] state, and a word's state as the mean of its sub-tokens' states.
"""

from __future__ import annotations

import torch

from orderlab.metrics import STACK_POOLINGS


def pool(h: torch.Tensor, how: str) -> torch.Tensor:
    """Pool token states over slots: (..., n, d) -> (..., d) by mean, max, first or last token."""
    if how == "mean":
        return h.mean(dim=-2)
    if how == "max":
        return h.amax(dim=-2)
    if how == "first":
        return h[..., 0, :]
    if how == "last":
        return h[..., -1, :]
    raise ValueError(f"unknown pooling {how!r}; expected one of {', '.join(STACK_POOLINGS)}")


def cls(h: torch.Tensor) -> torch.Tensor:
    """The [CLS] state: (B, T, d) -> (B, d)."""
    return h[:, 0]


def word_states(h: torch.Tensor, pooling: torch.Tensor) -> torch.Tensor:
    """Mean sub-token state of every word: (B, T, d), (B, n_words, T) -> (B, n_words, d)."""
    return pooling.to(h) @ h
