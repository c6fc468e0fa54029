"""T5 (encoder): a learned relative position bias per distance bucket and head. zero: the bias replaced by zeros."""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, Field

from orderlab.families.family import (
    FFN_MULT,
    UNABLATED,
    ConfigDepth,
    ConfigFfn,
    ConfigHeads,
    ConfigName,
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
from orderlab.families.hooks import replaced_output, submodule, zeroed


class T5ConfigFile(FamilyConfig):
    """transformers.T5Config's keys (d_model, d_kv, d_ff, num_layers, num_heads); the encoder's layers only."""

    vocab_size: ConfigRows = 32128
    d_model: ConfigWidth = Field(512, validation_alias=AliasChoices("d_model", "hidden_size"))
    d_kv: ConfigWidth = Field(64, validation_alias=AliasChoices("d_kv", "head_dim"))
    d_ff: ConfigFfn = 2048
    num_layers: ConfigDepth = Field(6, validation_alias=AliasChoices("num_layers", "num_hidden_layers"))
    num_heads: ConfigHeads = Field(8, validation_alias=AliasChoices("num_heads", "num_attention_heads"))
    feed_forward_proj: ConfigName = "relu"  # "gated-gelu": a gated feed-forward

    def shape(self) -> ModelShape:
        gated = self.feed_forward_proj.startswith("gated-")
        return ModelShape(self.d_model, self.num_layers, self.num_heads, self.d_ff, self.vocab_size,
                          query_width=self.num_heads * self.d_kv, ffn_matrices=3 if gated else 2)  # fmt: skip


def seeded_config(size: SeededSize) -> dict[str, Any]:
    return {
        "vocab_size": size.vocab,
        "d_model": size.d_model,
        "d_kv": size.d_model // size.n_heads,
        "d_ff": FFN_MULT * size.d_model,
        "num_layers": size.n_layers,
        "num_heads": size.n_heads,
        "is_encoder_decoder": False,
        "use_cache": False,
        "pad_token_id": 0,
        "eos_token_id": 3,
    }


def ablate(model: Any, ablation: str, seed: int) -> Any:
    table = submodule(model, "SelfAttention.relative_attention_bias")
    return replaced_output(table if ablation == "zero" else None, zeroed)


# Where a T5 encoder block forms each hook point: its self-attention sub-layer (layer.0) returns the residual after
# attention, its feed-forward (layer.1) adds DenseReluDense's output
HOOK_SITES = {
    "q": HookSite("layer.0.SelfAttention.q"),
    "k": HookSite("layer.0.SelfAttention.k"),
    "v": HookSite("layer.0.SelfAttention.v"),
    "attn_out": HookSite("layer.0.SelfAttention"),
    "mid": HookSite("layer.0"),
    "mlp_out": HookSite("layer.1.DenseReluDense"),
}

FAMILY = Family(
    "t5",
    "relative position bias, bucketed (encoder)",
    causal=False,
    ablations={
        UNABLATED: unablated("the bias per bucket and head, as built or loaded"),
        "zero": "the bias replaced by zeros",
    },
    model_types=("t5",),
    architectures=("T5",),
    config_file=T5ConfigFile,
    config_class="T5Config",
    model_class="T5EncoderModel",
    seeded_config=seeded_config,
    ablate=ablate,
    max_tokens=no_limit,
    hook_sites=fixed_sites(HOOK_SITES),
    attention_interface=True,
)
