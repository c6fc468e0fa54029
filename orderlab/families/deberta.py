"""DeBERTa (v2): disentangled attention, content-to-position and position-to-content scores from relative
embeddings. zero: the relative embeddings are zeros (so both position terms are constant in the key), and an
absolute table, where a checkpoint has one, gives zeros too."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any

from pydantic import Field, Strict

from orderlab.families.bert import BertConfigFile
from orderlab.families.family import (
    MAX_TABLE_ROWS,
    UNABLATED,
    ConfigCount,
    ConfigDepth,
    ConfigFfn,
    ConfigFlag,
    ConfigHeads,
    ConfigRows,
    ConfigWidth,
    Family,
    HookSite,
    ModelShape,
    SeededSize,
    fixed_sites,
    standard_config,
    unablated,
)
from orderlab.families.hooks import replaced_output, stacked, submodule, swapped_method, zeroed

SEEDED_BUCKETS = 256  # a seeded model's relative position buckets each way


class DebertaConfigFile(BertConfigFile):
    """transformers.DebertaV2Config's: BERT's keys and its own defaults; an absolute table if position_biased_input,
    a relative one of 2 x (position_buckets, else max_relative_positions, else max_position_embeddings) rows if
    relative_attention; no pooler in the model measured."""

    vocab_size: ConfigRows = 128100
    hidden_size: ConfigWidth = 1536
    num_hidden_layers: ConfigDepth = 24
    num_attention_heads: ConfigHeads = 24
    intermediate_size: ConfigFfn = 6144
    type_vocab_size: ConfigCount = 0
    position_biased_input: ConfigFlag = True
    relative_attention: ConfigFlag = False
    position_buckets: Annotated[int, Strict(), Field(ge=-1, le=MAX_TABLE_ROWS)] = -1  # -1 or 0: none
    max_relative_positions: Annotated[int, Strict(), Field(ge=-1, le=MAX_TABLE_ROWS)] = -1  # below 1: the table's

    def position_rows(self) -> int:
        span = next(rows for rows in (self.position_buckets, self.max_relative_positions, self.max_position_embeddings)
                    if rows > 0)  # fmt: skip
        absolute = self.max_position_embeddings * self.position_biased_input + self.type_vocab_size
        return absolute + 2 * span * self.relative_attention

    def shape(self) -> ModelShape:
        return replace(super().shape(), pooler=False)


def seeded_config(size: SeededSize) -> dict[str, Any]:
    return {
        **standard_config(size),
        "relative_attention": True,
        "position_biased_input": False,
        "pos_att_type": ["p2c", "c2p"],
        "norm_rel_ebd": "layer_norm",
        "position_buckets": SEEDED_BUCKETS,
        "max_relative_positions": -1,
        "share_att_key": True,
    }


def ablate(model: Any, ablation: str, seed: int) -> Any:
    import torch

    if ablation == UNABLATED:
        return stacked()
    encoder = submodule(model, "encoder")
    assert encoder is not None
    table = encoder.get_submodule("rel_embeddings")
    assert isinstance(table, torch.nn.Embedding)

    def no_relative() -> torch.Tensor:
        return torch.zeros_like(table.weight)

    absolute = submodule(model, "embeddings.position_embeddings")
    return stacked(swapped_method(encoder, "get_rel_embedding", no_relative), replaced_output(absolute, zeroed))


# Where a DeBERTa-v2 block forms each hook point (BERT's layout, its projections named *_proj)
HOOK_SITES = {
    "q": HookSite("attention.self.query_proj"),
    "k": HookSite("attention.self.key_proj"),
    "v": HookSite("attention.self.value_proj"),
    "attn_out": HookSite("attention.output.dense"),
    "mid": HookSite("attention"),
    "mlp_out": HookSite("output.dense"),
}

FAMILY = Family(
    "deberta",
    "disentangled relative positions (content-to-position, position-to-content)",
    causal=False,
    ablations={
        UNABLATED: unablated("the relative embeddings as built or loaded"),
        "zero": "the relative embeddings (and an absolute table, if any) replaced by zeros",
    },
    model_types=("deberta-v2",),
    architectures=("DebertaV2",),
    config_file=DebertaConfigFile,
    config_class="DebertaV2Config",
    model_class="DebertaV2Model",
    seeded_config=seeded_config,
    ablate=ablate,
    hook_sites=fixed_sites(HOOK_SITES),
)
