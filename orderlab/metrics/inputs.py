"""What the loop's metric computations compare: a chunk of reorderings against f(X), or a probe's two sentences.

Plain data over tensors; torch is imported for types only, so the registry above stays torch-free at import. A pass
is anything shaped like models/adapter_protocol.Pass (a protocol here: metrics sit below the models).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import torch


class PassLike(Protocol):
    """One forward pass over B orderings of a sentence, as the metrics read it."""

    @property
    def hidden(self) -> list[torch.Tensor]: ...  # L+1 x (B, n, d): word states per layer

    @property
    def pooled(self) -> dict[str, list[torch.Tensor]]: ...  # pooling -> L+1 x (B, d)

    @property
    def hooks(self) -> dict[str, torch.Tensor]: ...  # the requested hook points ('2.pattern': (B, h, T, T))

    @property
    def logprob(self) -> torch.Tensor | None: ...  # (B,) a causal LM's log-probability of each ordering


@dataclass(frozen=True)
class Reorderings:
    """What one chunk's per-permutation metrics compare: f(X) (a batch of 1) and f(PX) for B reorderings."""

    reference: PassLike
    output: PassLike
    slots: torch.Tensor  # (B, n): the reorderings
    matching: torch.Tensor  # (B, n): the word occurrence at each slot
    repeats: torch.Tensor | None  # (B, m, 2): where each pair of same-word occurrences sits; None: no repeated word
    model_slots: torch.Tensor | None  # (B, T): the reorderings on the model's own slots; None: no attention maps


@dataclass(frozen=True)
class ProbePasses:
    """What a probe's metrics compare: the single-sentence passes of a and b."""

    a: PassLike
    b: PassLike
    matching: torch.Tensor | None  # (1, n): b's slots to a's word occurrences, if b reorders a; else None


def vectors(passed: PassLike, pooling: str | None, layer: int) -> torch.Tensor:
    """A pass's sentence vectors (B, d) at one layer, pooled as the metric's registry entry says."""
    if pooling is None:
        raise ValueError("a metric of sentence vectors needs a pooling in its registry entry")
    return passed.pooled[pooling][layer]
