"""OPT: causal, a learned absolute position table read at position + 2 (the first two rows are never read by a
position: OPTLearnedPositionalEmbedding's offset). The table's ablations replace the rows it reads (trained, zero,
shuffled, sinusoidal), as for GPT-2."""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, Field

from orderlab.families.family import (
    FFN_MULT,
    MAX_POSITIONS,
    TABLE_ABLATIONS,
    ConfigDepth,
    ConfigFfn,
    ConfigFlag,
    ConfigHeads,
    ConfigRows,
    ConfigWidth,
    Family,
    FamilyConfig,
    HookSite,
    ModelShape,
    SeededSize,
)
from orderlab.families.hooks import table_ablation

OFFSET = 2  # OPTLearnedPositionalEmbedding.offset: position t reads row t + 2


class OPTConfigFile(FamilyConfig):
    """transformers.OPTConfig's keys and defaults (ffn_dim; the table holds max_position_embeddings + 2 rows)."""

    vocab_size: ConfigRows = 50272
    hidden_size: ConfigWidth = 768
    num_hidden_layers: ConfigDepth = 12
    num_attention_heads: ConfigHeads = 12
    ffn_dim: ConfigFfn = Field(3072, validation_alias=AliasChoices("ffn_dim", "intermediate_size"))
    max_position_embeddings: ConfigRows = 2048
    tie_word_embeddings: ConfigFlag = True

    def shape(self) -> ModelShape:
        return ModelShape(self.hidden_size, self.num_hidden_layers, self.num_attention_heads, self.ffn_dim,
                          self.vocab_size, positions=self.max_position_embeddings + OFFSET, head=True,
                          untied_head=not self.tie_word_embeddings,
                          token_positions=self.max_position_embeddings)  # fmt: skip


def seeded_config(size: SeededSize) -> dict[str, Any]:
    return {
        "vocab_size": size.vocab,
        "init_std": size.init_std,
        "hidden_size": size.d_model,
        "word_embed_proj_dim": size.d_model,
        "num_hidden_layers": size.n_layers,
        "num_attention_heads": size.n_heads,
        "ffn_dim": FFN_MULT * size.d_model,
        "max_position_embeddings": MAX_POSITIONS,
        "pad_token_id": 0,
        "bos_token_id": 2,
        "eos_token_id": 3,
    }


def table_ids(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The rows OPT's table reads: the position ids its decoder passes, past the offset."""
    return kwargs["position_ids"] + OFFSET


# Where an OPT block forms each hook point: q before its scaling; `mid` inline before a pre-norm block's
# final_layer_norm (do_layer_norm_before, the default), a post-norm block's self_attn_layer_norm output (OPT-350m)
PRE_NORM_SITES = {
    "q": HookSite("self_attn.q_proj"),
    "k": HookSite("self_attn.k_proj"),
    "v": HookSite("self_attn.v_proj"),
    "attn_out": HookSite("self_attn"),
    "mid": HookSite("final_layer_norm", side="input", in_place=True),
    "mlp_out": HookSite("fc2"),
}


def hook_sites(config: Any) -> dict[str, HookSite]:
    if getattr(config, "do_layer_norm_before", True):
        return PRE_NORM_SITES
    return {**PRE_NORM_SITES, "mid": HookSite("self_attn_layer_norm")}


FAMILY = Family(
    "opt",
    "learned absolute table, added to the input, read at position + 2",
    causal=True,
    start_token="</s>",
    ablations=TABLE_ABLATIONS,
    model_types=("opt",),
    architectures=("OPT",),
    config_file=OPTConfigFile,
    config_class="OPTConfig",
    model_class="OPTForCausalLM",
    seeded_config=seeded_config,
    ablate=table_ablation("embed_positions", table_ids),
    tokenizer_options=(("add_prefix_space", True),),
    cached_ablations=("trained", "zero", "shuffled", "sinusoidal"),  # the table is read at position ids
    packed_ablations=("trained", "zero", "shuffled", "sinusoidal"),  # position ids as given (the offset added after)
    hook_sites=hook_sites,
    attention_interface=True,
)
