"""BERT: a learned absolute position table added to the token embeddings (trained, zero, shuffled, sinusoidal)."""

from __future__ import annotations

from typing import Any

import torch

from orderlab.backends.families.base import FFN_MULT, MAX_POSITIONS, FamilyCode, Shape, learned_table, submodule


def config(shape: Shape) -> dict[str, Any]:
    return {
        "vocab_size": shape.vocab,
        "initializer_range": shape.init_std,
        "hidden_size": shape.d_model,
        "num_hidden_layers": shape.n_layers,
        "num_attention_heads": shape.n_heads,
        "intermediate_size": FFN_MULT * shape.d_model,
        "max_position_embeddings": MAX_POSITIONS,
    }


def ablate(model: torch.nn.Module, ablation: str, seed: int) -> Any:
    return learned_table(submodule(model, "embeddings.position_embeddings"), ablation, seed)


BERT = FamilyCode("bert", "BertConfig", "BertModel", config, ablate)
