"""Build small stacks for tests without going through a spec file."""

from __future__ import annotations

from orderlab.encodings import EncodingContext, build_encoding
from orderlab.models.attention_stack import AttentionStack, StackConfig, seeded_weights


def make_stack(encoding: str = "none", seed: int = 0, **config) -> AttentionStack:
    stack_config = StackConfig(**config)
    context = EncodingContext(
        d_model=stack_config.d_model, n_heads=stack_config.n_heads, causal=stack_config.causal, seed=seed,
        dtype=stack_config.dtype,
    )  # fmt: skip
    return AttentionStack(stack_config, build_encoding(encoding, context), seeded_weights(stack_config, seed))
