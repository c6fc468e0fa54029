"""A user's functions at a transformers model's hook points (orderlab.api.run(spec, hooks={"2.output": fn})).

`L.output` is what layer L's block returns (its hidden states), `L.input` for L >= 2 what layer L receives (layer
L-1's output); a function maps that tensor (B, T, d) to one of the same shape. Like an ablation, each is a hook
around one pass, removed after it, so no weight is written; unlike one, it is the user's: the spec records it under
`model.user_hooks` by its name and its rows' labels carry USER_HOOK (spec/families.py), never a built-in ablation's
name alone. The hidden states a pass records reflect the change: a causal LM's and T5's last recorded output is
after their final norm, as transformers returns it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from typing import Any, cast

import torch

from orderlab.errors import OrderlabError
from orderlab.spec.families import HOOKABLE_POINTS

UserHook = Callable[[torch.Tensor], torch.Tensor]


def layer_blocks(model: torch.nn.Module) -> torch.nn.ModuleList:
    """The model's blocks: the first ModuleList with one module per hidden layer (bert's encoder.layer, gpt2's h,
    llama's layers, t5's encoder block)."""
    count = int(cast(Any, model).config.num_hidden_layers)
    blocks = next((m for m in model.modules() if isinstance(m, torch.nn.ModuleList) and len(m) == count), None)
    if blocks is None:
        raise OrderlabError(f"hooks: {type(model).__name__} has no list of its {count} layers to hook")
    return blocks


def hooked_block(name: str, count: int) -> int | None:
    """The block (from 0) whose output a hook named `name` replaces, or None for a name at no layer of `count`.
    `L.input` for L >= 2 is layer L-1's output, the same tensor (the hidden states transformers returns record it
    once); layer 1's input (the embeddings' output) is not hooked: families form it in different modules."""
    layer, _, point = name.partition(".")
    if not layer.isdigit() or not 1 <= int(layer) <= count or point not in HOOKABLE_POINTS:
        return None
    block = int(layer) - 1 - (point == "input")
    return block if block >= 0 else None


def checked_hooks(model: torch.nn.Module, hooks: Mapping[str, UserHook]) -> None:
    """OrderlabError (one line) for a hook at no layer of this model, or one that is not a function."""
    count = len(layer_blocks(model))
    for name, function in hooks.items():
        if hooked_block(name, count) is None or not callable(function):
            raise OrderlabError(f"hooks: {name!r}: {function!r}; expected a function at L.output (L in 1..{count}) "
                                f"or L.input (L in 2..{count})")  # fmt: skip


@contextmanager
def user_hooks_applied(model: torch.nn.Module, hooks: Mapping[str, UserHook]) -> Iterator[None]:
    """While open, each function replaces the tensor at its point of every pass; removed on exit."""
    if not hooks:
        yield
        return
    blocks = layer_blocks(model)
    with ExitStack() as stack:
        for name, function in hooks.items():
            block = hooked_block(name, len(blocks))
            assert block is not None, "checked_hooks refuses hooks at no layer"
            # before transformers' own hooks, which record a layer's output as the hidden states it returns
            handle = blocks[block].register_forward_hook(_on_output(name, function), prepend=True)
            stack.callback(handle.remove)
        yield


def _applied(name: str, function: UserHook, tensor: torch.Tensor) -> torch.Tensor:
    result = function(tensor)
    if not isinstance(result, torch.Tensor) or result.shape != tensor.shape:
        got = tuple(result.shape) if isinstance(result, torch.Tensor) else type(result).__name__
        raise OrderlabError(f"hooks: {name!r} returned {got}; expected a tensor of shape {tuple(tensor.shape)}")
    return result.to(tensor.dtype)


def _on_output(name: str, function: UserHook) -> Callable[..., Any]:
    def hook(_module: torch.nn.Module, _args: tuple[Any, ...], output: Any) -> Any:
        if isinstance(output, torch.Tensor):
            return _applied(name, function, output)
        return (_applied(name, function, output[0]), *output[1:])

    return hook
