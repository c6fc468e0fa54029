"""What every family's code provides, and the hooks its ablations are made of."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

import torch

from orderlab.models.hf.ablations import position_table

MAX_POSITIONS = 512  # seeded configs: rows of a learned table, range of rotary position ids
FFN_MULT = 4  # seeded configs: feed-forward width over d_model

Ablate = Callable[[torch.nn.Module, str, int], Any]  # (model, ablation, seed) -> a context manager


@dataclass(frozen=True)
class Shape:
    """A seeded model's size, from the spec."""

    d_model: int
    n_heads: int
    n_layers: int
    vocab: int

    @property
    def init_std(self) -> float:
        """Seeded weights' standard deviation, 1/sqrt(d_model): attention scores of order one, not HF's near-zero
        0.02 (with which a small model's attention is almost uniform and position barely shows)."""
        return float(self.d_model**-0.5)


def standard_config(shape: Shape) -> dict[str, Any]:
    """The config arguments that bert, deberta and llama name alike; each family adds its own."""
    return {
        "vocab_size": shape.vocab,
        "initializer_range": shape.init_std,
        "hidden_size": shape.d_model,
        "num_hidden_layers": shape.n_layers,
        "num_attention_heads": shape.n_heads,
        "intermediate_size": FFN_MULT * shape.d_model,
        "max_position_embeddings": MAX_POSITIONS,
    }


@dataclass(frozen=True)
class FamilyCode:
    """A family's transformers classes, its seeded config, and its ablations as context managers."""

    name: str
    config_class: str  # transformers class of the seeded config
    model_class: str  # transformers class built from a config or a checkpoint (a causal LM keeps its head)
    config: Callable[[Shape], dict[str, Any]]  # config arguments of a seeded model of this shape
    ablate: Ablate
    causal: bool = False
    # The family's own name for the token a sequence starts with ([CLS] of an encoder, GPT-2's <|endoftext|>): a
    # seeded model's word-level tokenizer names its first special so, as trace shows it.
    start_token: str = "[CLS]"
    tokenizer_options: tuple[tuple[str, Any], ...] = ()  # AutoTokenizer arguments for pre-split words
    needs_mask: bool = False  # give every pass an all-ones attention mask (the ablation reads it)
    # A causal family's ablations under which a pass fed one token at a time, after its prefix's KV cache, equals
    # the dense pass (positions at token t depend on t alone): these share prefixes (models/kv_prefix.py).
    cached_ablations: tuple[str, ...] = ()
    # Children of the base model that no measurement runs (BERT's pooler): a checkpoint may lack or add them.
    unused_parts: tuple[str, ...] = ()


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


@contextmanager
def learned_table(table: torch.nn.Module | None, ablation: str, seed: int) -> Iterator[None]:
    """A learned absolute table's ablation (models/hf/ablations.py) as its module's output: weights untouched."""
    if ablation == "trained" or table is None:
        yield
        return
    assert isinstance(table, torch.nn.Embedding)
    replacement = position_table(ablation, table.weight.detach(), seed)  # (P, d)
    with replaced_output(table, lambda ids, _output: torch.nn.functional.embedding(ids, replacement)):
        yield


def zeroed(_input: torch.Tensor, output: torch.Tensor) -> torch.Tensor:
    return torch.zeros_like(output)


@contextmanager
def stacked(*contexts: Any) -> Iterator[None]:
    """Several ablation contexts entered as one (none: a pass as built)."""
    with ExitStack() as stack:
        for context in contexts:
            stack.enter_context(context)
        yield
