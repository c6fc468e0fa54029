"""GPT-NeoX (Pythia): causal, rotary positions on part of each head (rotary_pct, a quarter by default), the rest of
each head unrotated. trained: RoPE on; zero: every position id 0 (the identity rotation); shuffled: position ids
in a seeded random order. Only the rotary module's input changes."""

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
    standard_config,
)
from orderlab.families.hooks import rotary_ablation


class GPTNeoXConfigFile(FamilyConfig):
    """transformers.GPTNeoXConfig's keys and defaults: BERT's names, an untied head by default, no table."""

    vocab_size: ConfigRows = 50432
    hidden_size: ConfigWidth = 6144
    num_hidden_layers: ConfigDepth = 44
    num_attention_heads: ConfigHeads = 64
    intermediate_size: ConfigFfn = 24576
    tie_word_embeddings: ConfigFlag = False
    max_position_embeddings: ConfigRows = 2048  # the rotary positions' range: longer sequences are refused

    def shape(self) -> ModelShape:
        return ModelShape(self.hidden_size, self.num_hidden_layers, self.num_attention_heads, self.intermediate_size,
                          self.vocab_size, head=True, untied_head=not self.tie_word_embeddings,
                          token_positions=self.max_position_embeddings)  # fmt: skip


def seeded_config(size: SeededSize) -> dict[str, Any]:
    return {**standard_config(size), "bos_token_id": 2, "eos_token_id": 3, "pad_token_id": 0}


# Where a GPT-NeoX block forms each hook point: q, k and v interleaved per head in query_key_value (before the
# rotation); `mid` only without the parallel residual (use_parallel_residual, on by default), as
# post_attention_layernorm's input
PARALLEL_SITES = {
    "q": HookSite("attention.query_key_value", part=0, fused="heads"),
    "k": HookSite("attention.query_key_value", part=1, fused="heads"),
    "v": HookSite("attention.query_key_value", part=2, fused="heads"),
    "attn_out": HookSite("attention"),
    "mlp_out": HookSite("mlp"),
}


def hook_sites(config: Any) -> dict[str, HookSite]:
    """A parallel-residual block (the default) has no residual between attention and MLP."""
    if getattr(config, "use_parallel_residual", True):
        return PARALLEL_SITES
    return {**PARALLEL_SITES, "mid": HookSite("post_attention_layernorm", side="input", in_place=True)}


FAMILY = Family(
    "gpt_neox",
    "rotary (RoPE) on part of each head's queries and keys (Pythia: a quarter)",
    causal=True,
    start_token="<|endoftext|>",
    ablations=ROTARY_ABLATIONS,
    model_types=("gpt_neox",),
    architectures=("GPTNeoX",),
    config_file=GPTNeoXConfigFile,
    config_class="GPTNeoXConfig",
    model_class="GPTNeoXForCausalLM",
    seeded_config=seeded_config,
    ablate=rotary_ablation,
    tokenizer_options=(("add_prefix_space", True),),
    cached_ablations=("trained", "zero", "shuffled"),  # cached keys keep the rotation of their position id
    packed_ablations=("trained", "zero", "shuffled"),  # position ids, 4D mask as given
    head_width_multiple=8,
    head_width_reason="RoPE rotates pairs of a quarter of each head",
    hook_sites=hook_sites,
    attention_interface=True,
)
