"""GPT-2: causal, a learned absolute position table `wpe` (trained, zero, shuffled, sinusoidal)."""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, Field

from orderlab.families.family import (
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
    fixed_sites,
)
from orderlab.families.hooks import table_ablation


class GPT2ConfigFile(FamilyConfig):
    """transformers.GPT2Config's keys (n_embd, n_layer, n_head, n_positions, n_inner; BERT's names as aliases)."""

    vocab_size: ConfigRows = 50257
    n_embd: ConfigWidth = Field(768, validation_alias=AliasChoices("n_embd", "hidden_size"))
    n_layer: ConfigDepth = Field(12, validation_alias=AliasChoices("n_layer", "num_hidden_layers"))
    n_head: ConfigHeads = Field(12, validation_alias=AliasChoices("n_head", "num_attention_heads"))
    n_positions: ConfigRows = Field(1024, validation_alias=AliasChoices("n_positions", "max_position_embeddings"))
    n_inner: ConfigFfn | None = None  # None: 4 x n_embd
    tie_word_embeddings: ConfigFlag = True

    def shape(self) -> ModelShape:
        return ModelShape(self.n_embd, self.n_layer, self.n_head, self.n_inner or 4 * self.n_embd, self.vocab_size,
                          positions=self.n_positions, head=True, untied_head=not self.tie_word_embeddings,
                          token_positions=self.n_positions)  # fmt: skip


def seeded_config(size: SeededSize) -> dict[str, Any]:
    return {
        "vocab_size": size.vocab,
        "initializer_range": size.init_std,
        "n_embd": size.d_model,
        "n_layer": size.n_layers,
        "n_head": size.n_heads,
        "n_positions": MAX_POSITIONS,
        "bos_token_id": 2,
        "eos_token_id": 2,
    }


# Where a GPT-2 block forms each hook point: q, k and v thirds of the fused c_attn; `mid` formed inline (ln_2's input)
HOOK_SITES = {
    "q": HookSite("attn.c_attn", part=0),
    "k": HookSite("attn.c_attn", part=1),
    "v": HookSite("attn.c_attn", part=2),
    "attn_out": HookSite("attn"),
    "mid": HookSite("ln_2", side="input", in_place=True),
    "mlp_out": HookSite("mlp"),
}

FAMILY = Family(
    "gpt2",
    "learned absolute table, added to the input",
    causal=True,
    start_token="<|endoftext|>",
    ablations=TABLE_ABLATIONS,
    model_types=("gpt2",),
    architectures=("GPT2",),
    config_file=GPT2ConfigFile,
    config_class="GPT2Config",
    model_class="GPT2LMHeadModel",
    seeded_config=seeded_config,
    ablate=table_ablation("wpe"),
    tokenizer_options=(("add_prefix_space", True),),
    cached_ablations=("trained", "zero", "shuffled", "sinusoidal"),  # the table is read at position ids
    packed_ablations=("trained", "zero", "shuffled", "sinusoidal"),  # position ids, 4D mask as given
    hook_sites=fixed_sites(HOOK_SITES),
    attention_interface=True,
)
