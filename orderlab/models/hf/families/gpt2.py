"""GPT-2: causal, a learned absolute position table `wpe` (trained, zero, shuffled, sinusoidal)."""

from __future__ import annotations

from typing import Any

import torch

from orderlab.models.hf.families.family_code import MAX_POSITIONS, FamilyCode, Shape, learned_table, submodule


def config(shape: Shape) -> dict[str, Any]:
    return {
        "vocab_size": shape.vocab,
        "initializer_range": shape.init_std,
        "n_embd": shape.d_model,
        "n_layer": shape.n_layers,
        "n_head": shape.n_heads,
        "n_positions": MAX_POSITIONS,
        "bos_token_id": 2,
        "eos_token_id": 2,
    }


def ablate(model: torch.nn.Module, ablation: str, seed: int) -> Any:
    return learned_table(submodule(model, "wpe"), ablation, seed)


GPT2 = FamilyCode(
    "gpt2",
    "GPT2Config",
    "GPT2LMHeadModel",
    config,
    ablate,
    causal=True,
    start_token="<|endoftext|>",
    tokenizer_options=(("add_prefix_space", True),),
    cached_ablations=("trained", "zero", "shuffled", "sinusoidal"),  # the table is read at position ids
)
