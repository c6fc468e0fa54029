"""The pieces a family's ablations are made of: context managers around one forward pass that install forward hooks
or shadow a method on the model instance and undo it on exit, so loaded weights are never written
(TransformerLens#157). torch is imported inside the functions: a family's file stays torch-free at import."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING, Any

from orderlab.families.family import MAX_POSITIONS, UNABLATED, Ablate
from orderlab.families.position_tables import position_table

if TYPE_CHECKING:
    import torch

IdsOf = Callable[[tuple[Any, ...], dict[str, Any]], Any]  # a table module's call (args, kwargs) -> the rows it reads


def submodule(model: torch.nn.Module, suffix: str) -> torch.nn.Module | None:
    """The first module whose dotted name ends with `suffix` (base models and heads nest them differently)."""
    return next((module for name, module in model.named_modules() if name.endswith(suffix)), None)


@contextmanager
def replaced_output(
    module: torch.nn.Module | None, replace: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
) -> Iterator[None]:
    """While open, `module`'s output is replace(its input, its output); nothing happens without a module."""
    if module is None:
        yield
        return
    handle = module.register_forward_hook(lambda _module, args, output: replace(args[0], output))
    try:
        yield
    finally:
        handle.remove()


@contextmanager
def swapped_method(owner: object, name: str, method: Callable[..., Any]) -> Iterator[None]:
    """While open, `owner.name` is `method` (an instance attribute shadowing the class's); removed on exit."""
    setattr(owner, name, method)
    try:
        yield
    finally:
        delattr(owner, name)


def first_argument(args: tuple[Any, ...], _kwargs: dict[str, Any]) -> Any:
    """The rows an nn.Embedding reads: its input."""
    return args[0]


@contextmanager
def learned_table(
    table: torch.nn.Module | None, ablation: str, seed: int, ids_of: IdsOf = first_argument
) -> Iterator[None]:
    """A learned absolute table's ablation (position_tables.py) as its module's output: weights untouched. `ids_of`:
    the rows the module reads, from its call (an nn.Embedding's input; OPT's table is called with a mask)."""
    import torch

    if ablation == UNABLATED or table is None:
        yield
        return
    assert isinstance(table, torch.nn.Embedding)
    replacement = position_table(ablation, table.weight.detach(), seed)  # (P, d)

    def replaced(_module: Any, args: tuple[Any, ...], kwargs: dict[str, Any], _output: Any) -> torch.Tensor:
        return torch.nn.functional.embedding(ids_of(args, kwargs), replacement)

    handle = table.register_forward_hook(replaced, with_kwargs=True)
    try:
        yield
    finally:
        handle.remove()


def table_ablation(suffix: str, ids_of: IdsOf = first_argument) -> Ablate:
    """A family's `ablate` for its learned table, the module whose name ends with `suffix` (learned_table)."""

    def ablate(model: Any, ablation: str, seed: int) -> Any:
        return learned_table(submodule(model, suffix), ablation, seed, ids_of)

    return ablate


def rotary_ablation(model: Any, ablation: str, seed: int) -> Any:
    """A RoPE family's `ablate`: its rotary module's position ids moved (rotary_ids), over as many positions as the
    model covers (at least MAX_POSITIONS: a seeded model's, whose shuffled ids every baseline was drawn with)."""
    positions = max(MAX_POSITIONS, int(getattr(model.config, "max_position_embeddings", 0) or 0))
    return rotary_ids(submodule(model, "rotary_emb"), ablation, seed, positions)


def moved_ids(ids: torch.Tensor, order: torch.Tensor | None) -> torch.Tensor:
    """The position ids a rotation sees under an ablation: ids (B, T) as the model made them. zero (order None): all
    0, the identity rotation; shuffled: `order` (shuffled_positions) read at each id."""
    import torch

    return torch.zeros_like(ids) if order is None else order.to(ids.device)[ids]


def shuffled_positions(seed: int, positions: int = MAX_POSITIONS) -> torch.Tensor:
    """A seeded permutation of 0..positions-1 (a table fixed at 512 was an IndexError for a model covering more),
    drawn once per ablated pass, outside the hook: a graph torch.compile captures cannot make a generator."""
    import torch

    return torch.randperm(positions, generator=torch.Generator().manual_seed(seed))


@contextmanager
def rotary_ids(
    rotary: torch.nn.Module | None, ablation: str, seed: int, positions: int = MAX_POSITIONS
) -> Iterator[None]:
    """A rotary module's ablation: its position ids (the second argument, or the keyword) moved (moved_ids); the
    module's input alone changes."""
    if ablation == UNABLATED or rotary is None:
        yield
        return
    order = None if ablation == "zero" else shuffled_positions(seed, positions)

    def moved(_module: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if "position_ids" in kwargs:
            return args, {**kwargs, "position_ids": moved_ids(kwargs["position_ids"], order)}
        return (args[0], moved_ids(args[1], order), *args[2:]), kwargs

    handle = rotary.register_forward_pre_hook(moved, with_kwargs=True)
    try:
        yield
    finally:
        handle.remove()


def zeroed(_input: torch.Tensor, output: torch.Tensor) -> torch.Tensor:
    import torch

    return torch.zeros_like(output)


@contextmanager
def stacked(*contexts: Any) -> Iterator[None]:
    """Several ablation contexts entered as one (none: a pass as built)."""
    with ExitStack() as stack:
        for context in contexts:
            stack.enter_context(context)
        yield
