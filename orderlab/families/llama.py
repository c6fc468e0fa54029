"""Llama: causal, rotary positions on queries and keys. trained: RoPE on; zero: every position id 0, so every
rotation is the identity; shuffled: position ids in a seeded random order. Only the rotary module's input changes."""

from __future__ import annotations

from typing import Any

from orderlab.families.family import (
    ROTARY_ABLATIONS,
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
    standard_config,
)
from orderlab.families.hooks import rotary_ablation


class LlamaConfigFile(FamilyConfig):
    """transformers.LlamaConfig's keys: a gated feed-forward, grouped-query attention, rotary positions (no table)."""

    vocab_size: ConfigRows = 32000
    hidden_size: ConfigWidth = 4096
    intermediate_size: ConfigFfn = 11008
    num_hidden_layers: ConfigDepth = 32
    num_attention_heads: ConfigHeads = 32
    num_key_value_heads: ConfigHeads | None = None  # None: one per attention head
    head_dim: ConfigWidth | None = None  # None: hidden_size // num_attention_heads
    tie_word_embeddings: ConfigFlag = False
    max_position_embeddings: ConfigRows = 2048  # the rotary positions' range: longer sequences are refused

    def shape(self) -> ModelShape:
        width = self.head_dim or self.hidden_size // self.num_attention_heads
        keys = (self.num_key_value_heads or self.num_attention_heads) * width
        return ModelShape(self.hidden_size, self.num_hidden_layers, self.num_attention_heads, self.intermediate_size,
                          self.vocab_size, query_width=self.num_attention_heads * width, kv_width=keys,
                          ffn_matrices=3, head=True, untied_head=not self.tie_word_embeddings,
                          token_positions=self.max_position_embeddings)  # fmt: skip


def seeded_config(size: SeededSize) -> dict[str, Any]:
    return {
        **standard_config(size),
        "num_key_value_heads": size.kv_heads or size.n_heads,
        "bos_token_id": 2,
        "eos_token_id": 3,
        "pad_token_id": 0,
    }


# Where a Llama block forms each hook point: q and k before the rotation; `mid` inline (post_attention_layernorm's
# input)
HOOK_SITES = {
    "q": HookSite("self_attn.q_proj"),
    "k": HookSite("self_attn.k_proj"),
    "v": HookSite("self_attn.v_proj"),
    "attn_out": HookSite("self_attn"),
    "mid": HookSite("post_attention_layernorm", side="input", in_place=True),
    "mlp_out": HookSite("mlp"),
}

FAMILY = Family(
    "llama",
    "rotary (RoPE) on queries and keys",
    causal=True,
    start_token="<s>",
    seeded_fields=("n_kv_heads", "d_ffn"),
    ablations=ROTARY_ABLATIONS,
    model_types=("llama", "mistral"),
    architectures=("Llama", "Mistral"),
    config_file=LlamaConfigFile,
    config_class="LlamaConfig",
    model_class="LlamaForCausalLM",
    seeded_config=seeded_config,
    ablate=rotary_ablation,
    cached_ablations=("trained", "zero", "shuffled"),  # cached keys keep the rotation of their position id
    packed_ablations=("trained", "zero", "shuffled"),  # position ids, 4D mask as given
    head_width_multiple=2,
    head_width_reason="RoPE rotates pairs",
    hook_sites=fixed_sites(HOOK_SITES),
    attention_interface=True,
)
