"""What activation patching runs (measure/patching.py), the same on a transformers model and on the attention stack:
one sentence's tokens with each word's span, passes on rows of token ids in any order, and the model's hook channel
(its `user_hooks`: the functions every pass runs at their points), which patching fills for a while.

On the stack a word is one token, its id the word's index in the sentence, and every point the stack forms may be
written (its record() runs the function there, models/attention_stack.py); on a transformers model the points a
function may write are the family's (models/hf/interventions.checked_hooks).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import torch

from orderlab.measure.adapters import Adapter
from orderlab.models.hf.grouping import WordTokens
from orderlab.models.stack_adapter import StackAdapter, writable_on_stack
from orderlab.models.user_hooks import UserHook


class Channel(Protocol):
    """A model's hook channel: the functions every pass runs at their points (PretrainedBackend's, StackAdapter's)."""

    user_hooks: dict[str, UserHook]


@dataclass(frozen=True)
class Ran:
    """One pass's outputs patching reads its effect on: every layer's states (B, T, d), a causal LM's logits."""

    hidden: list[torch.Tensor]
    logits: torch.Tensor | None


@dataclass(frozen=True)
class Patchable:
    """One sentence of one condition as patching runs it: its tokens, a pass on rows of token ids (B, T) through the
    hook channel, and that channel."""

    tokens: WordTokens
    forward: Callable[[torch.Tensor], Ran]
    channel: Channel


def patchable(adapter: Adapter, words: list[str]) -> Patchable:
    """`words` on this adapter's model: a stack (seeded, or a trained checkpoint's) or a transformers model."""
    if isinstance(adapter, StackAdapter):
        sentence = adapter.sentence(words)
        slots = tuple((slot, slot + 1) for slot in range(len(words)))

        def run(ids: torch.Tensor) -> Ran:
            return Ran(sentence.forward(ids).hidden, None)

        return Patchable(WordTokens(tuple(range(len(words))), slots), run, adapter)
    from orderlab.models.pretrained import PretrainedAdapter

    assert isinstance(adapter, PretrainedAdapter), "build_adapters makes stack (checkpoint's too) and pretrained ones"
    backend = adapter.backend

    def forward(ids: torch.Tensor) -> Ran:
        done = backend.forward(ids)
        return Ran(done.hidden, done.logits)

    return Patchable(backend.word_tokens(words), forward, backend)


def check_writable(adapter: Adapter, hooks: dict[str, UserHook]) -> None:
    """OrderlabError (one line naming the valid points, 'hooks: ...') for a hook at a point no function may write on
    this adapter's model: the check the user's own functions pass."""
    if isinstance(adapter, StackAdapter):
        return writable_on_stack(adapter.spec.stack, hooks)
    from orderlab.models.hf.interventions import checked_hooks
    from orderlab.models.pretrained import PretrainedAdapter

    assert isinstance(adapter, PretrainedAdapter), "build_adapters makes stack (checkpoint's too) and pretrained ones"
    checked_hooks(adapter.backend.model, adapter.backend.code, hooks)
