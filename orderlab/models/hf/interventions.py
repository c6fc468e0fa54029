"""A user's functions at a transformers model's hook points (orderlab.api.run(spec, hooks={"2.output": fn})).

`L.output` is what layer L's block returns (its hidden states), `L.input` what layer L receives (for L >= 2, layer
L-1's output; for L = 1, the embeddings' output, however the family forms it); a function maps that tensor (B, T, d)
to one of the same shape. Like an ablation, each is a hook
around one pass, removed after it, so no weight is written; unlike one, it is the user's: the spec records it under
`model.user_hooks` by its name and its rows' labels carry USER_HOOK (spec/model_specs.py), never a built-in ablation's
name alone. The hidden states a pass records reflect the change: a causal LM's and T5's last recorded output is
after their final norm, as transformers returns it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from typing import Any, cast

import torch

from orderlab.errors import OrderlabError
from orderlab.spec.model_specs import HOOKABLE_POINTS

UserHook = Callable[[torch.Tensor], torch.Tensor]


def layer_blocks(model: torch.nn.Module) -> torch.nn.ModuleList:
    """The model's blocks: the first ModuleList with one module per hidden layer (bert's encoder.layer, gpt2's h,
    llama's layers, t5's encoder block)."""
    count = int(cast(Any, model).config.num_hidden_layers)
    blocks = next((m for m in model.modules() if isinstance(m, torch.nn.ModuleList) and len(m) == count), None)
    if blocks is None:
        raise OrderlabError(f"hooks: {type(model).__name__} has no list of its {count} layers to hook")
    return blocks


def hooked_block(name: str, count: int) -> tuple[int, bool] | None:
    """The block (from 0) at whose edge a hook named `name` acts, and whether on its input (True: only `1.input`, the
    embeddings' output, which families form in different modules) or its output; None for a name at no layer of
    `count`. `L.input` for L >= 2 is layer L-1's output, the same tensor (the hidden states transformers returns
    record it once)."""
    layer, _, point = name.partition(".")
    if not layer.isdigit() or not 1 <= int(layer) <= count or point not in HOOKABLE_POINTS:
        return None
    if name == "1.input":
        return 0, True
    return int(layer) - 1 - (point == "input"), False


def checked_hooks(model: torch.nn.Module, hooks: Mapping[str, UserHook]) -> None:
    """OrderlabError (one line) for a hook at no layer of this model, or one that is not a function."""
    count = len(layer_blocks(model))
    for name, function in hooks.items():
        if hooked_block(name, count) is None or not callable(function):
            raise OrderlabError(f"hooks: {name!r}: {function!r}; expected a function at L.input or L.output (L in "
                                f"1..{count})")  # fmt: skip


@contextmanager
def user_hooks_applied(model: torch.nn.Module, hooks: Mapping[str, UserHook]) -> Iterator[None]:
    """While open, each function replaces the tensor at its point of every pass; removed on exit."""
    if not hooks:
        yield
        return
    blocks = layer_blocks(model)
    with ExitStack() as stack:
        for name, function in hooks.items():
            where = hooked_block(name, len(blocks))
            assert where is not None, "checked_hooks refuses hooks at no layer"
            block, before = where
            # before transformers' own hooks, which record a layer's input or output as the hidden states it returns
            if before:
                handle = blocks[block].register_forward_pre_hook(_on_input(name, function), prepend=True,
                                                                 with_kwargs=True)  # fmt: skip
            else:
                handle = blocks[block].register_forward_hook(_on_output(name, function), prepend=True)
            stack.callback(handle.remove)
        yield


def _applied(name: str, function: UserHook, tensor: torch.Tensor) -> torch.Tensor:
    result = function(tensor)
    if not isinstance(result, torch.Tensor) or result.shape != tensor.shape:
        got = tuple(result.shape) if isinstance(result, torch.Tensor) else type(result).__name__
        raise OrderlabError(f"hooks: {name!r} returned {got}; expected a tensor of shape {tuple(tensor.shape)}")
    if not result.is_floating_point() or result.device != tensor.device:
        raise OrderlabError(f"hooks: {name!r} returned a {result.dtype} tensor on {result.device}; expected a "
                            f"floating-point tensor on {tensor.device}, as it was given")  # fmt: skip
    return result.to(tensor.dtype)


def _on_input(name: str, function: UserHook) -> Callable[..., Any]:
    """Layer 1's input changed in place: the very tensor a family recorded as its first hidden state before calling
    the block (or records in a hook of its own), so what is recorded is what the block receives."""

    def hook(_module: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        hidden = args[0] if args else kwargs["hidden_states"]
        changed = _applied(name, function, hidden)
        with torch.no_grad():
            hidden.copy_(changed)

    return hook


def _on_output(name: str, function: UserHook) -> Callable[..., Any]:
    def hook(_module: torch.nn.Module, _args: tuple[Any, ...], output: Any) -> Any:
        if isinstance(output, torch.Tensor):
            return _applied(name, function, output)
        return (_applied(name, function, output[0]), *output[1:])

    return hook
