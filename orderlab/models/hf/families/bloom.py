"""BLOOM: causal, ALiBi (a per-head linear distance bias on attention scores). zero: zero slopes, no bias.

The model always gets an attention mask (models/hf/loader.py), so it builds its bias through the
instance's `build_alibi_tensor`, which the ablation shadows for one pass."""

from __future__ import annotations

from typing import Any

import torch

from orderlab.models.hf.families.family_code import FamilyCode, Shape, stacked, submodule, swapped_method


def config(shape: Shape) -> dict[str, Any]:
    return {
        "vocab_size": shape.vocab,
        "initializer_range": shape.init_std,
        "hidden_size": shape.d_model,
        "n_layer": shape.n_layers,
        "n_head": shape.n_heads,
        "bos_token_id": 2,
        "eos_token_id": 3,
        "pad_token_id": 0,
    }


def no_slopes(mask: torch.Tensor, heads: int, dtype: torch.dtype) -> torch.Tensor:
    """build_alibi_tensor's shape, (B * heads, 1, T), all zeros."""
    return torch.zeros(mask.shape[0] * heads, 1, mask.shape[1], dtype=dtype, device=mask.device)


def ablate(model: torch.nn.Module, ablation: str, seed: int) -> Any:
    if ablation == "trained":
        return stacked()
    base = submodule(model, "transformer") or model  # BloomForCausalLM.transformer, or a BloomModel
    return swapped_method(base, "build_alibi_tensor", no_slopes)


BLOOM = FamilyCode(
    "bloom",
    "BloomConfig",
    "BloomForCausalLM",
    config,
    ablate,
    causal=True,
    start_token="<s>",
    tokenizer_options=(("add_prefix_space", True),),
    needs_mask=True,
    cached_ablations=("trained", "zero"),  # the bias is built from the mask over the cache and the new token
)
