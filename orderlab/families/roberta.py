"""RoBERTa: a learned absolute table added to the input, read past the padding index (position t of a token that is
not padding reads row pad_token_id + 1 + t). The table's ablations replace the rows it reads (trained, zero,
shuffled, sinusoidal), as for BERT."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from orderlab.families.bert import HOOK_SITES, BertConfigFile
from orderlab.families.family import (
    MAX_POSITIONS,
    TABLE_ABLATIONS,
    ConfigCount,
    ConfigRows,
    Family,
    ModelShape,
    SeededSize,
    fixed_sites,
    standard_config,
)
from orderlab.families.hooks import table_ablation

PAD = 0  # a seeded model's padding id: the word-level tokenizer's [PAD]


class RobertaConfigFile(BertConfigFile):
    """transformers.RobertaConfig's keys (BERT's) and its own defaults."""

    vocab_size: ConfigRows = 50265
    pad_token_id: ConfigCount = 1

    def shape(self) -> ModelShape:
        """BERT's, the positions covering the table's rows past the padding index."""
        return replace(super().shape(), token_positions=self.max_position_embeddings - self.pad_token_id - 1)


def seeded_config(size: SeededSize) -> dict[str, Any]:
    rows = MAX_POSITIONS + PAD + 1  # positions 0..MAX_POSITIONS-1 read past the padding index
    return {**standard_config(size), "max_position_embeddings": rows, "type_vocab_size": 1, "pad_token_id": PAD,
            "bos_token_id": 2, "eos_token_id": 3}  # fmt: skip


def max_tokens(config: Any) -> int:
    """The table's rows less those before the first position (the padding index and the rows below it)."""
    return int(config.max_position_embeddings) - int(config.pad_token_id) - 1


FAMILY = Family(
    "roberta",
    "learned absolute table, added to the input, read past the padding index",
    causal=False,
    ablations=TABLE_ABLATIONS,
    model_types=("roberta",),
    architectures=("Roberta",),
    config_file=RobertaConfigFile,
    config_class="RobertaConfig",
    model_class="RobertaModel",
    seeded_config=seeded_config,
    ablate=table_ablation("embeddings.position_embeddings"),
    tokenizer_options=(("add_prefix_space", True),),
    unused_parts=("pooler",),
    max_tokens=max_tokens,
    hook_sites=fixed_sites(HOOK_SITES),
    attention_interface=True,
)
