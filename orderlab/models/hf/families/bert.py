"""BERT: a learned absolute position table added to the token embeddings (trained, zero, shuffled, sinusoidal)."""

from __future__ import annotations

from typing import Any

import torch

from orderlab.models.hf.families.family_code import (
    FamilyCode,
    Shape,
    learned_table,
    standard_config,
    submodule,
)


def config(shape: Shape) -> dict[str, Any]:
    return standard_config(shape)


def ablate(model: torch.nn.Module, ablation: str, seed: int) -> Any:
    return learned_table(submodule(model, "embeddings.position_embeddings"), ablation, seed)


BERT = FamilyCode("bert", "BertConfig", "BertModel", config, ablate, unused_parts=("pooler",))
