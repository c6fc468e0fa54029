"""T5 (encoder): a learned relative position bias per distance bucket and head. zero: the bias replaced by zeros."""

from __future__ import annotations

from typing import Any

import torch

from orderlab.models.hf.families.family_code import FFN_MULT, FamilyCode, Shape, replaced_output, submodule, zeroed


def config(shape: Shape) -> dict[str, Any]:
    return {
        "vocab_size": shape.vocab,
        "d_model": shape.d_model,
        "d_kv": shape.d_model // shape.n_heads,
        "d_ff": FFN_MULT * shape.d_model,
        "num_layers": shape.n_layers,
        "num_heads": shape.n_heads,
        "is_encoder_decoder": False,
        "use_cache": False,
        "pad_token_id": 0,
        "eos_token_id": 3,
    }


def ablate(model: torch.nn.Module, ablation: str, seed: int) -> Any:
    table = submodule(model, "SelfAttention.relative_attention_bias")
    return replaced_output(table if ablation == "zero" else None, zeroed)


T5 = FamilyCode("t5", "T5Config", "T5EncoderModel", config, ablate)
