"""BERT: a learned absolute position table added to the token embeddings (trained, zero, shuffled, sinusoidal)."""

from __future__ import annotations

from typing import Any

from orderlab.families.family import (
    TABLE_ABLATIONS,
    ConfigCount,
    ConfigDepth,
    ConfigFfn,
    ConfigHeads,
    ConfigRows,
    ConfigWidth,
    Family,
    FamilyConfig,
    HookSite,
    ModelShape,
    SeededSize,
    fixed_sites,
    standard_config,
)
from orderlab.families.hooks import table_ablation


class BertConfigFile(FamilyConfig):
    """transformers.BertConfig's keys and defaults."""

    vocab_size: ConfigRows = 30522
    hidden_size: ConfigWidth = 768
    num_hidden_layers: ConfigDepth = 12
    num_attention_heads: ConfigHeads = 12
    intermediate_size: ConfigFfn = 3072
    max_position_embeddings: ConfigRows = 512
    type_vocab_size: ConfigCount = 2

    def position_rows(self) -> int:
        return self.max_position_embeddings + self.type_vocab_size

    def shape(self) -> ModelShape:
        return ModelShape(self.hidden_size, self.num_hidden_layers, self.num_attention_heads, self.intermediate_size,
                          self.vocab_size, positions=self.position_rows(), pooler=True,
                          token_positions=self.max_position_embeddings)  # fmt: skip


def seeded_config(size: SeededSize) -> dict[str, Any]:
    return standard_config(size)


# Where a BERT block forms each hook point (post-norm: `mid` is attention's sub-layer after its residual and norm)
HOOK_SITES = {
    "q": HookSite("attention.self.query"),
    "k": HookSite("attention.self.key"),
    "v": HookSite("attention.self.value"),
    "attn_out": HookSite("attention.output.dense"),
    "mid": HookSite("attention"),
    "mlp_out": HookSite("output.dense"),
}

FAMILY = Family(
    "bert",
    "learned absolute table, added to the input",
    causal=False,
    ablations=TABLE_ABLATIONS,
    model_types=("bert",),
    architectures=("Bert",),
    config_file=BertConfigFile,
    config_class="BertConfig",
    model_class="BertModel",
    seeded_config=seeded_config,
    ablate=table_ablation("embeddings.position_embeddings"),
    unused_parts=("pooler",),
    hook_sites=fixed_sites(HOOK_SITES),
    attention_interface=True,
)
