"""Llama: causal, rotary positions on queries and keys. trained: RoPE on; zero: every position id 0, so every
rotation is the identity; shuffled: position ids in a seeded random order. Only the rotary module's input changes."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from orderlab.models.hf.families.family_code import MAX_POSITIONS, FamilyCode, Shape, standard_config, submodule


def config(shape: Shape) -> dict[str, Any]:
    return {
        **standard_config(shape),
        "num_key_value_heads": shape.n_heads,
        "bos_token_id": 2,
        "eos_token_id": 3,
        "pad_token_id": 0,
    }


def position_ids(ablation: str, ids: torch.Tensor, seed: int) -> torch.Tensor:
    """The position ids the rotation sees under `ablation`: ids (B, T) as the model made them."""
    if ablation == "zero":
        return torch.zeros_like(ids)
    order = torch.randperm(MAX_POSITIONS, generator=torch.Generator().manual_seed(seed)).to(ids.device)
    return order[ids]


@contextmanager
def ablate(model: torch.nn.Module, ablation: str, seed: int) -> Iterator[None]:
    rotary = submodule(model, "rotary_emb")
    if ablation == "trained" or rotary is None:
        yield
        return

    def moved(_module: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if "position_ids" in kwargs:
            return args, {**kwargs, "position_ids": position_ids(ablation, kwargs["position_ids"], seed)}
        return (args[0], position_ids(ablation, args[1], seed), *args[2:]), kwargs

    handle = rotary.register_forward_pre_hook(moved, with_kwargs=True)
    try:
        yield
    finally:
        handle.remove()


LLAMA = FamilyCode(
    "llama", "LlamaConfig", "LlamaForCausalLM", config, ablate, causal=True, start_token="<s>",
    cached_ablations=("trained", "zero", "shuffled"),  # cached keys keep the rotation of their position id
)  # fmt: skip
