"""BLOOM: causal, ALiBi (a per-head linear distance bias on attention scores). zero: zero slopes, no bias.

The model always gets an attention mask (models/hf/loader.py), so it builds its bias through the
instance's `build_alibi_tensor`, which the ablation shadows for one pass."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import AliasChoices, Field

from orderlab.families.family import (
    UNABLATED,
    ConfigDepth,
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
    no_limit,
    unablated,
)
from orderlab.families.hooks import stacked, submodule, swapped_method

if TYPE_CHECKING:
    import torch


class BloomConfigFile(FamilyConfig):
    """transformers.BloomConfig's keys (hidden_size or n_embed, n_layer, n_head); ALiBi, no table; FFN 4 x width."""

    vocab_size: ConfigRows = 250880
    hidden_size: ConfigWidth = Field(64, validation_alias=AliasChoices("n_embed", "hidden_size"))
    n_layer: ConfigDepth = Field(2, validation_alias=AliasChoices("n_layer", "num_hidden_layers"))
    n_head: ConfigHeads = Field(8, validation_alias=AliasChoices("n_head", "num_attention_heads"))
    tie_word_embeddings: ConfigFlag = True

    def shape(self) -> ModelShape:
        return ModelShape(self.hidden_size, self.n_layer, self.n_head, 4 * self.hidden_size, self.vocab_size,
                          head=True, untied_head=not self.tie_word_embeddings)  # fmt: skip


def seeded_config(size: SeededSize) -> dict[str, Any]:
    return {
        "vocab_size": size.vocab,
        "initializer_range": size.init_std,
        "hidden_size": size.d_model,
        "n_layer": size.n_layers,
        "n_head": size.n_heads,
        "bos_token_id": 2,
        "eos_token_id": 3,
        "pad_token_id": 0,
    }


def no_slopes(mask: torch.Tensor, heads: int, dtype: torch.dtype) -> torch.Tensor:
    """build_alibi_tensor's shape, (B * heads, 1, T), all zeros."""
    import torch

    return torch.zeros(mask.shape[0] * heads, 1, mask.shape[1], dtype=dtype, device=mask.device)


def ablate(model: Any, ablation: str, seed: int) -> Any:
    if ablation == UNABLATED:
        return stacked()
    base = submodule(model, "transformer") or model  # BloomForCausalLM.transformer, or a BloomModel
    return swapped_method(base, "build_alibi_tensor", no_slopes)


# Where a BLOOM block forms each hook point: q, k and v interleaved per head in query_key_value; attention and MLP
# add their residual inside, so their outputs are dense's and dense_4h_to_h's, and `mid` is inline
HOOK_SITES = {
    "q": HookSite("self_attention.query_key_value", part=0, fused="heads"),
    "k": HookSite("self_attention.query_key_value", part=1, fused="heads"),
    "v": HookSite("self_attention.query_key_value", part=2, fused="heads"),
    "attn_out": HookSite("self_attention.dense"),
    "mid": HookSite("post_attention_layernorm", side="input", in_place=True),
    "mlp_out": HookSite("mlp.dense_4h_to_h"),
}

FAMILY = Family(
    "bloom",
    "ALiBi: a linear distance bias on attention scores",
    causal=True,
    start_token="<s>",
    ablations={UNABLATED: unablated("ALiBi on (the model's slopes)"), "zero": "zero slopes: no distance bias"},
    model_types=("bloom",),
    architectures=("Bloom",),
    config_file=BloomConfigFile,
    config_class="BloomConfig",
    model_class="BloomForCausalLM",
    seeded_config=seeded_config,
    ablate=ablate,
    tokenizer_options=(("add_prefix_space", True),),
    needs_mask=True,
    cached_ablations=("trained", "zero"),  # the bias is built from the mask over the cache and the new token
    max_tokens=no_limit,
    hook_sites=fixed_sites(HOOK_SITES),
)
