"""A user's functions at a transformers model's hook points (orderlab.api.run(spec, hooks={"2.output": fn})).

`L.output` is what layer L's block returns (its hidden states), `L.input` what layer L receives (for L >= 2, layer
L-1's output; for L = 1, the embeddings' output, however the family forms it); the points a module forms inside a
block (q, k, v, attn_out, mid, mlp_out where the family's file declares them: models/hf/sites.py), the attention
pattern formed inside attention (where it goes through transformers' AttentionInterface: models/hf/pattern_writes.py)
and a causal LM's logits likewise. A function maps the point's tensor to one of the same shape. Like an ablation,
each is a hook around one pass, removed after it, so no weight is written; unlike one, it is the user's: the spec
records it under `model.user_hooks` by its name and its rows' labels carry USER_HOOK (spec/model_specs.py), never a
built-in ablation's name alone. The hidden states a pass records reflect the change: a causal LM's and T5's last
recorded output is after their final norm, as transformers returns it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from functools import partial
from typing import Any, cast

import torch

from orderlab.core.hook_points import LOGITS, layer_of, point_of, unknown_point
from orderlab.errors import OrderlabError
from orderlab.families.family import Family
from orderlab.models.hf.pattern_writes import patterns_written
from orderlab.models.hf.sites import Rows, layer_blocks, points_written, read_only, writable_points
from orderlab.models.user_hooks import UserHook, applied


def hooked_block(name: str, count: int) -> tuple[int, bool] | None:
    """The block (from 0) at whose edge a hook named `name` acts, and whether on its input (True: only `1.input`, the
    embeddings' output, which families form in different modules) or its output; None for a point a module forms
    inside a block (models/hf/sites.py). `L.input` for L >= 2 is layer L-1's output, the same tensor (the hidden
    states transformers returns record it once)."""
    layer, point = layer_of(name), point_of(name)
    if layer is None or not 1 <= layer <= count or point not in ("input", "output"):
        return None
    if name == "1.input":
        return 0, True
    return layer - 1 - (point == "input"), False


def checked_hooks(model: torch.nn.Module, family: Family, hooks: Mapping[str, UserHook]) -> None:
    """OrderlabError (one line naming the valid points) for a hook at no point of this model, at a point formed
    inline (read only), or one that is not a function."""
    count, config = len(layer_blocks(model)), cast(Any, model).config
    writable = writable_points(family, config)
    for name, function in hooks.items():
        problem = unknown_point(name, count, family.hook_points(config), family.pass_points)
        if problem is None and point_of(name) not in (*writable, *family.pass_points):
            problem = (f"{name!r} is {read_only(family, config, point_of(name))} on {family.name}; expected one of "
                       f"{', '.join(writable)}")  # fmt: skip
        if problem is None and not callable(function):
            problem = f"{name!r}: {function!r}; expected a function of the point's tensor"
        if problem is not None:
            raise OrderlabError(f"hooks: {problem}")


@contextmanager
def user_hooks_applied(
    model: torch.nn.Module, family: Family, hooks: Mapping[str, UserHook], rows: Rows
) -> Iterator[None]:
    """While open, each function replaces the tensor at its point of every pass of `rows` (B, T); removed on exit."""
    if not hooks:
        yield
        return
    blocks = layer_blocks(model)
    patterns = {name: function for name, function in hooks.items() if point_of(name) == "pattern"}
    with ExitStack() as stack:
        stack.enter_context(patterns_written(model, patterns))  # formed inside attention: models/hf/pattern_writes.py
        for name, function in hooks.items():
            if name in patterns:
                continue
            where = hooked_block(name, len(blocks))
            # before transformers' own hooks, which record a layer's input or output as the hidden states it returns
            if name == LOGITS:
                handle = cast(Any, model).get_output_embeddings().register_forward_hook(_on_output(name, function))
            elif where is None:
                handle = points_written(model, family, name, rows, partial(applied, name, function))
            elif where[1]:
                handle = blocks[where[0]].register_forward_pre_hook(_on_input(name, function), prepend=True,
                                                                    with_kwargs=True)  # fmt: skip
            else:
                handle = blocks[where[0]].register_forward_hook(_on_output(name, function), prepend=True)
            stack.callback(handle.remove)
        yield


def _on_input(name: str, function: UserHook) -> Callable[..., Any]:
    """Layer 1's input changed in place: the very tensor a family recorded as its first hidden state before calling
    the block (or records in a hook of its own), so what is recorded is what the block receives."""

    def hook(_module: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        hidden = args[0] if args else kwargs["hidden_states"]
        changed = applied(name, function, hidden)
        with torch.no_grad():
            hidden.copy_(changed)

    return hook


def _on_output(name: str, function: UserHook) -> Callable[..., Any]:
    def hook(_module: torch.nn.Module, _args: tuple[Any, ...], output: Any) -> Any:
        if isinstance(output, torch.Tensor):
            return applied(name, function, output)
        return (applied(name, function, output[0]), *output[1:])

    return hook
