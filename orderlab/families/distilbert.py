"""DistilBERT: BERT's learned absolute table (no token types, no pooler), six layers in its checkpoints. Ablations
as BERT's (trained, zero, shuffled, sinusoidal)."""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, Field

from orderlab.families.family import (
    FFN_MULT,
    MAX_POSITIONS,
    TABLE_ABLATIONS,
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
)
from orderlab.families.hooks import table_ablation


class DistilBertConfigFile(FamilyConfig):
    """transformers.DistilBertConfig's keys (dim, n_layers, n_heads, hidden_dim; BERT's names as aliases)."""

    vocab_size: ConfigRows = 30522
    dim: ConfigWidth = Field(768, validation_alias=AliasChoices("dim", "hidden_size"))
    n_layers: ConfigDepth = Field(6, validation_alias=AliasChoices("n_layers", "num_hidden_layers"))
    n_heads: ConfigHeads = Field(12, validation_alias=AliasChoices("n_heads", "num_attention_heads"))
    hidden_dim: ConfigFfn = Field(3072, validation_alias=AliasChoices("hidden_dim", "intermediate_size"))
    max_position_embeddings: ConfigRows = 512

    def shape(self) -> ModelShape:
        return ModelShape(self.dim, self.n_layers, self.n_heads, self.hidden_dim, self.vocab_size,
                          positions=self.max_position_embeddings,
                          token_positions=self.max_position_embeddings)  # fmt: skip


def seeded_config(size: SeededSize) -> dict[str, Any]:
    return {
        "vocab_size": size.vocab,
        "initializer_range": size.init_std,
        "dim": size.d_model,
        "n_layers": size.n_layers,
        "n_heads": size.n_heads,
        "hidden_dim": FFN_MULT * size.d_model,
        "max_position_embeddings": MAX_POSITIONS,
        "pad_token_id": 0,
    }


# Where a DistilBERT block forms each hook point (post-norm: `mid` is sa_layer_norm's output)
HOOK_SITES = {
    "q": HookSite("attention.q_lin"),
    "k": HookSite("attention.k_lin"),
    "v": HookSite("attention.v_lin"),
    "attn_out": HookSite("attention.out_lin"),
    "mid": HookSite("sa_layer_norm"),
    "mlp_out": HookSite("ffn"),
}

FAMILY = Family(
    "distilbert",
    "learned absolute table, added to the input",
    causal=False,
    ablations=TABLE_ABLATIONS,
    model_types=("distilbert",),
    architectures=("DistilBert",),
    config_file=DistilBertConfigFile,
    config_class="DistilBertConfig",
    model_class="DistilBertModel",
    seeded_config=seeded_config,
    ablate=table_ablation("embeddings.position_embeddings"),
    hook_sites=fixed_sites(HOOK_SITES),
    attention_interface=True,
)
