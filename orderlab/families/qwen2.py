"""Qwen2: causal, rotary positions with grouped-query attention (fewer key and value heads than query heads; a seeded
model has half as many), the Mistral-style design (Mistral checkpoints themselves read as llama, whose keys they
share). Ablations as Llama's: only the rotary module's input changes."""

from __future__ import annotations

from typing import Any

from orderlab.families.family import (
    ROTARY_ABLATIONS,
    ConfigDepth,
    ConfigFfn,
    ConfigHeads,
    ConfigRows,
    ConfigWidth,
    Family,
    SeededSize,
    fixed_sites,
    standard_config,
)
from orderlab.families.hooks import rotary_ablation
from orderlab.families.llama import HOOK_SITES, LlamaConfigFile


class Qwen2ConfigFile(LlamaConfigFile):
    """transformers.Qwen2Config's keys (Llama's) and its own defaults."""

    vocab_size: ConfigRows = 151936
    hidden_size: ConfigWidth = 4096
    intermediate_size: ConfigFfn = 22016
    num_hidden_layers: ConfigDepth = 32
    num_attention_heads: ConfigHeads = 32
    num_key_value_heads: ConfigHeads | None = 32
    max_position_embeddings: ConfigRows = 32768


def seeded_config(size: SeededSize) -> dict[str, Any]:
    grouped = size.n_heads // 2 if size.n_heads % 2 == 0 else size.n_heads  # two query heads per key head
    return {**standard_config(size), "num_key_value_heads": grouped, "bos_token_id": 2, "eos_token_id": 3,
            "pad_token_id": 0}  # fmt: skip


FAMILY = Family(
    "qwen2",
    "rotary (RoPE) on queries and keys, grouped-query attention",
    causal=True,
    start_token="<|endoftext|>",
    ablations=ROTARY_ABLATIONS,
    model_types=("qwen2",),
    architectures=("Qwen2",),
    config_file=Qwen2ConfigFile,
    config_class="Qwen2Config",
    model_class="Qwen2ForCausalLM",
    seeded_config=seeded_config,
    ablate=rotary_ablation,
    cached_ablations=("trained", "zero", "shuffled"),  # cached keys keep the rotation of their position id
    packed_ablations=("trained", "zero", "shuffled"),  # position ids, 4D mask as given
    head_width_multiple=2,
    head_width_reason="RoPE rotates pairs",
    hook_sites=fixed_sites(HOOK_SITES),
    attention_interface=True,
)
