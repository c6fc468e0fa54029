"""A KV cache with a slot per token of the sentence, for the shared-prefix walk (models/kv_prefix.py).

transformers' DynamicCache appends a token by concatenation: every layer's keys and values are copied into a new,
one slot longer tensor at every depth, and a walk of n + 1 one-token calls allocates and frees tensors of every
length, so that peak memory grows with the number of chunks (docs/performance.md, "What was tried"). Here each
layer's keys and values live in buffers of n + 1 slots: a token is written into its slot, and a reorder gathers
the filled slots once into a new buffer of the same size. Attention reads the filled slots as a view: the same
numbers as the concatenated cache's, bit for bit (tests/unit/models/test_prefix_sharing_hf.py).

Built on transformers' exported Cache and DynamicLayer (4.56 and later); with an older transformers the model's own
DynamicCache serves (None).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import torch

from orderlab.models.hf.loader import import_transformers


def slot_cache(layers: int, slots: int) -> Any:
    """A transformers Cache of `layers` slot layers, `slots` tokens each; None where transformers has no layer API."""
    classes = cache_classes()
    if classes is None:
        return None
    transformers_cache, slot_layer = classes
    return transformers_cache(layers=[slot_layer(slots) for _ in range(layers)])


@cache
def cache_classes() -> tuple[type, type] | None:
    """transformers' Cache, and the slot layer built on its DynamicLayer (defined once transformers is imported)."""
    transformers = import_transformers()
    if not hasattr(transformers, "DynamicLayer"):
        return None

    class SlotLayer(transformers.DynamicLayer):  # type: ignore[misc, name-defined]
        """One layer's keys and values, (B, heads, slots, head width) buffers filled slot by slot."""

        def __init__(self, slots: int):
            super().__init__()
            self.slots, self.length = slots, 0

        def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
            B, heads, _, width = key_states.shape
            self.device = key_states.device
            self.key_slots = key_states.new_empty(B, heads, self.slots, width)
            self.value_slots = value_states.new_empty(B, heads, self.slots, value_states.shape[-1])
            self.is_initialized = True

        def update(
            self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
        ) -> tuple[torch.Tensor, torch.Tensor]:
            if not self.is_initialized:
                self.lazy_initialization(key_states, value_states)
            start, self.length = self.length, self.length + key_states.shape[-2]
            self.key_slots[:, :, start : self.length] = key_states
            self.value_slots[:, :, start : self.length] = value_states
            self.keys, self.values = self.key_slots[:, :, : self.length], self.value_slots[:, :, : self.length]
            return self.keys, self.values

        def get_seq_length(self) -> int:
            return self.length

        def reorder_cache(self, beam_idx: torch.Tensor) -> None:
            """Row i becomes row beam_idx[i] (each prefix its parent's): the filled slots gathered once."""
            self.key_slots, self.value_slots = (gathered(buffer, beam_idx, self.length)
                                                for buffer in (self.key_slots, self.value_slots))  # fmt: skip
            self.keys, self.values = self.key_slots[:, :, : self.length], self.value_slots[:, :, : self.length]

    return transformers.Cache, SlotLayer


def gathered(buffer: torch.Tensor, rows: torch.Tensor, filled: int) -> torch.Tensor:
    """A new buffer whose row i holds buffer's row rows[i] in its first `filled` slots."""
    new = buffer.new_empty(len(rows), *buffer.shape[1:])
    torch.index_select(buffer[:, :, :filled], 0, rows, out=new[:, :, :filled])
    return new
