"""A user's function at `L.pattern` on a transformers model: the layer's attention probabilities replaced, and
attention's output computed from what it returns.

The probabilities are formed inside attention, where no module's output holds them. A family whose attention calls
transformers' AttentionInterface (Family.attention_interface) looks its implementation up by name at every call, so
a pass that writes a pattern runs under a name of orderlab's (IMPLEMENTATION): at every layer the module's own eager
attention (the implementation that forms the probabilities, with eager's mask), and at a written layer, on its
first call of the pass as every written point (models/hf/sites.points_written), the function's probabilities times
the values (key-value heads repeated for the query heads they serve, as eager repeats them), laid out as eager returns
its output. A function returning its argument gives eager's numbers bit for bit. The model's own implementation is
restored after the pass; the probabilities a pass returns (output_attentions) at a written layer are the written ones,
as the stack's `pattern` is what its pass goes on with.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, cast

import torch

from orderlab.core.hook_points import layer_of
from orderlab.errors import OrderlabError
from orderlab.models.hf.sites import layer_blocks
from orderlab.models.user_hooks import UserHook, applied

IMPLEMENTATION = "orderlab_pattern"  # the name a pattern-writing pass runs its attention under


@dataclass
class _Write:
    """One layer's function at its pattern, and whether the pass has reached it yet."""

    name: str
    replace: UserHook
    done: bool = False


_WRITES: dict[torch.nn.Module, _Write] = {}  # each module of a written layer's block, while its pass is open


@contextmanager
def patterns_written(model: Any, hooks: Mapping[str, UserHook]) -> Iterator[None]:
    """While open, each pass of `model` replaces the pattern of each layer named in `hooks` ('1.pattern': a function
    of layer 1's (B, heads, T, T) probabilities, the pass's own rows, padding included) and goes on from it;
    OrderlabError (one line) where the model does not take the implementation, or a pass ends without forming a
    written layer's pattern."""
    if not hooks:
        yield
        return
    _registered()
    own, blocks = model.config._attn_implementation, layer_blocks(model)
    written = {name: _Write(name, function) for name, function in hooks.items()}
    modules = {module: write for name, write in written.items()
               for module in blocks[cast(int, layer_of(name)) - 1].modules()}  # fmt: skip
    model.set_attn_implementation(IMPLEMENTATION)
    _WRITES.update(modules)
    try:
        if model.config._attn_implementation != IMPLEMENTATION:
            raise OrderlabError(f"hooks: {type(model).__name__} does not take an attention implementation of "
                                "orderlab's; expected a model whose attention goes through transformers' "
                                "AttentionInterface to write its pattern")  # fmt: skip
        yield
    finally:
        for module in modules:
            _WRITES.pop(module, None)
        model.set_attn_implementation(own)
    missed = sorted(name for name, write in written.items() if not write.done)
    if missed:
        raise OrderlabError(f"hooks: {missed[0]!r}: the pass formed no attention probabilities there; expected "
                            "attention that goes through transformers' AttentionInterface")  # fmt: skip


def _registered() -> None:
    """IMPLEMENTATION in transformers' attention and mask registries (registering again changes nothing), with
    eager's mask: without a mask of its own, transformers would give the implementation none (no causal mask)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask

    AttentionInterface.register(IMPLEMENTATION, _attention)
    AttentionMaskInterface.register(IMPLEMENTATION, eager_mask)


def _attention(
    module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, mask: Any, **kwargs: Any
) -> tuple[torch.Tensor, torch.Tensor]:
    """The module's own eager attention: (B, T, heads, d_head) output and (B, heads, T, T) probabilities; at a
    written layer's first call, the output recomputed from the function's probabilities."""
    output, weights = _eager(module, query, key, value, mask, **kwargs)
    write = _WRITES.get(module)
    if write is None or write.done:
        return output, weights
    write.done = True
    pattern = applied(write.name, write.replace, weights)
    values = value.repeat_interleave(query.shape[1] // value.shape[1], dim=1)  # eager's repeat_kv
    return torch.matmul(pattern, values).transpose(1, 2).contiguous(), pattern


def _eager(
    module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, mask: Any, **kwargs: Any
) -> tuple[torch.Tensor, torch.Tensor]:
    """What the module computes under 'eager': its modeling file's eager_attention_forward, or GPT-2's upcast and
    reordered path where its config asks for that (its eager branch, which the interface never reaches)."""
    computed: Any = (
        cast(Any, module)._upcast_and_reordered_attn(query, key, value, mask)
        if getattr(module, "reorder_and_upcast_attn", False)
        else sys.modules[type(module).__module__].eager_attention_forward(module, query, key, value, mask, **kwargs)
    )
    return computed[0], computed[1]
