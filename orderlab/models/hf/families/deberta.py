"""DeBERTa (v2): disentangled attention, content-to-position and position-to-content scores from relative
embeddings. zero: the relative embeddings are zeros (so both position terms are constant in the key), and an
absolute table, where a checkpoint has one, gives zeros too."""

from __future__ import annotations

from typing import Any

import torch

from orderlab.models.hf.families.family_code import (
    FamilyCode,
    Shape,
    replaced_output,
    stacked,
    standard_config,
    submodule,
    swapped_method,
    zeroed,
)


def config(shape: Shape) -> dict[str, Any]:
    return {
        **standard_config(shape),
        "relative_attention": True,
        "position_biased_input": False,
        "pos_att_type": ["p2c", "c2p"],
        "norm_rel_ebd": "layer_norm",
        "position_buckets": 256,
        "max_relative_positions": -1,
        "share_att_key": True,
    }


def ablate(model: torch.nn.Module, ablation: str, seed: int) -> Any:
    if ablation == "trained":
        return stacked()
    encoder = submodule(model, "encoder")
    assert encoder is not None
    table = encoder.get_submodule("rel_embeddings")
    assert isinstance(table, torch.nn.Embedding)

    def no_relative() -> torch.Tensor:
        return torch.zeros_like(table.weight)

    absolute = submodule(model, "embeddings.position_embeddings")
    return stacked(swapped_method(encoder, "get_rel_embedding", no_relative), replaced_output(absolute, zeroed))


DEBERTA = FamilyCode("deberta", "DebertaV2Config", "DebertaV2Model", config, ablate)
