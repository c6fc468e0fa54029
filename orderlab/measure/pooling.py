"""Pooling a pretrained model's token states: per sentence (as sentence-transformers) and per word.

Sentence-transformers' mean pooling averages the last layer's token states under the attention
mask, [CLS] and [SEP] included; CLS pooling takes slot 0. A word's state is the mean of its
sub-tokens' states.
"""

from __future__ import annotations

import torch


def masked_mean(h: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over unmasked slots: (B, T, d), (B, T) -> (B, d)."""
    weights = mask.to(h.dtype)[..., None]  # (B, T, 1)
    return (h * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1e-9)


def cls(h: torch.Tensor) -> torch.Tensor:
    """The [CLS] state: (B, T, d) -> (B, d)."""
    return h[:, 0]


def word_states(h: torch.Tensor, pooling: torch.Tensor) -> torch.Tensor:
    """Mean sub-token state of every word: (B, T, d), (B, n_words, T) -> (B, n_words, d)."""
    return pooling.to(h) @ h
