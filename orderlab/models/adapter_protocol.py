"""The adapter protocol: what the measuring loop asks of a model, whatever the model is.

A model is measured on one sentence at a time. `Adapter.sentence(words)` binds a sentence; its
`forward(orders)` runs B reorderings of it (orders[b, i] = the word at slot i, as in
orderlab.core.permutations) and returns a `Pass` at the level of words: a word's sub-tokens are averaged,
so that every metric compares the same word occurrences whatever the tokenizer did. Sentence-level
poolings (the stack's mean / max / first / last over words, a BERT's token mean and [CLS]) come with it, and so
do the named hook points a caller requests (TransformerLens's habit: `trace` reads a layer's q, k, scores,
pattern... from them; nothing re-implements attention). Attention maps are hook points too (`L.pattern`, on the
model's own slots): one request, one channel. A pass leaves its fast path (prefix sharing, the fused kernel) only
for the points that path cannot form. Each adapter names the points its model exposes (`hook_points`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Protocol, runtime_checkable

import torch

from orderlab.core.hook_points import UNBATCHED_POINTS, pattern_points
from orderlab.core.permutations import Permutation
from orderlab.metrics import Model, Pooling
from orderlab.models.attention_stack import Hooks
from orderlab.spec.schema import DecodabilitySpec


@dataclass(frozen=True)
class Pass:
    """One forward pass over B orderings of a sentence."""

    hidden: list[torch.Tensor]  # L+1 x (B, n, d): word states per layer (layer 0: the input, positions added)
    pooled: dict[str, list[torch.Tensor]]  # pooling -> L+1 x (B, d): the sentence vectors the model defines
    logprob: torch.Tensor | None = None  # (B,) a causal LM's log-probability of each reordering; else None
    hooks: Hooks = field(default_factory=dict)  # the requested hook points the model exposes, (B, ...) each

    def cast(self, dtype: torch.dtype) -> Pass:
        """The same pass in another dtype (the round-off twin's, compared with the run's)."""
        return Pass(
            [h.to(dtype) for h in self.hidden],
            {how: [v.to(dtype) for v in vectors] for how, vectors in self.pooled.items()},
            None if self.logprob is None else self.logprob.to(dtype),
            {name: tensor.to(dtype) for name, tensor in self.hooks.items()},
        )

    def rows(self, start: int, stop: int | None = None, copy: bool = False) -> Pass:
        """Reorderings start..stop-1 of the pass; copy=True keeps them without holding the whole batch's memory."""

        def cut(tensor: torch.Tensor) -> torch.Tensor:
            part = tensor[start:stop]
            return part.clone() if copy else part

        return Pass(
            [cut(h) for h in self.hidden],
            {how: [cut(v) for v in vectors] for how, vectors in self.pooled.items()},
            None if self.logprob is None else cut(self.logprob),
            {name: tensor if name in UNBATCHED_POINTS else cut(tensor) for name, tensor in self.hooks.items()},
        )

    def patterns(self) -> list[torch.Tensor]:
        """L x (B, h, T, T): every layer's attention probabilities on the model's own slots, when the pass was asked
        for them all (pattern_points); else empty, never some layers' maps under other layers' numbers."""
        names = pattern_points(len(self.hidden) - 1)
        return [self.hooks[name] for name in names] if all(name in self.hooks for name in names) else []


# Hook names asked of a forward pass: hook_points.hook_name(layer, point) for a layer's points, or a whole pass's
# ('tokens', 'position'). Those the model does not expose are absent from the Pass's hooks.
HookRequest = Collection[str]


def requested(filled: Hooks, request: HookRequest, count: int) -> Hooks:
    """The requested points of a pass's hooks, each cut to the batch's first `count` rows (a pass pads its batch to
    whole row tiles: batching.py)."""
    return {name: filled[name] if name in UNBATCHED_POINTS else filled[name][:count]
            for name in request if name in filled}  # fmt: skip


class Sentence(Protocol):
    """A sentence bound to a model."""

    words: list[str]

    def forward(self, orders: torch.Tensor, hooks: HookRequest = ()) -> Pass:
        """orders: (B, n) word slots; B reorderings through the model, each in whole row tiles (batching.py);
        `hooks`: the named points the Pass should carry, from this same pass (pattern_points: the attention maps)."""
        ...

    def slot_names(self) -> list[str]:
        """The model's own slots as text, in the sentence's order: the stack's words, a tokenizer's tokens."""
        ...

    def attention_slots(self, orders: torch.Tensor) -> torch.Tensor:
        """(B, T): where each reordering moves the model's own slots (its tokens), for attention metrics."""
        ...

    def word_maps(self, maps: list[torch.Tensor], order: Permutation) -> list[torch.Tensor]:
        """L x (h, T, T) maps of one reordering on the model's slots -> L x (h, n, n) between its words, each row
        a distribution over the words (attention.csv draws words, whatever the tokenizer did)."""
        ...


class Adapter(Protocol):
    """One condition of a run (an encoding, a position ablation): a model the loop measures."""

    label: str  # the `encoding` column of its rows
    dtype: torch.dtype  # its passes' (a 16-bit model's are widened to float32: models/precision.py)
    device: torch.device
    # Which rows of the metric registry (orderlab/metrics) it writes: those of its kind of model that compare
    # states, or a sentence vector it defines (its passes' `pooled` holds at least these).
    model: ClassVar[Model]
    poolings: ClassVar[tuple[Pooling, ...]]

    @property
    def n_layers(self) -> int: ...

    @property
    def hook_points(self) -> tuple[str, ...]:
        """The hook points its passes expose (core/hook_points.py): per layer (named by hook_name) and per pass."""
        ...

    def sentence(self, words: list[str]) -> Sentence: ...

    def twin(self) -> Adapter:
        """The same model in its twin's precision (spec/fields.twin_dtype): its passes measure this one's round-off."""
        ...

    def finer(self) -> Adapter:
        """The same model in its twin's precision, its passes cut as this one's (shared prefixes where this one shares
        them): what measures escalated orders again (measure/escalation.py), a chunk at a time."""
        ...

    def computed_dtype(self, words: list[str]) -> torch.dtype:
        """The coarsest precision a pass over `words` computes in: the model's dtype, or coarser where the model
        casts its states down inside (models/precision.py)."""
        ...

    def chunk_size(self, n: int, attention: bool) -> int:
        """Reorderings per forward pass of an n-word sentence, so that one chunk fits the memory budget."""
        ...

    def random_sentences(self, probe: DecodabilitySpec, seed: int) -> list[torch.Tensor]:
        """L+1 x (S, length, d): word states of the position probe's seeded random sentences."""
        ...


@runtime_checkable
class Compiles(Protocol):
    """An adapter some of whose passes may go through torch.compile: the stack's dense passes, a causal LM's walk."""

    label: str

    def compilation(self) -> dict[str, float | str] | None:
        """How torch.compile served its passes (manifest.json's torch_compile); None where it was not asked."""
        ...


def compile_records(adapters: Sequence[Adapter], columns: Mapping[str, object]) -> list[dict[str, object]]:
    """One record per adapter whose passes were asked to go through torch.compile (Compiles.compilation)."""
    return [
        {"encoding": adapter.label, **columns, **record}
        for adapter in adapters
        if isinstance(adapter, Compiles) and (record := adapter.compilation()) is not None
    ]
