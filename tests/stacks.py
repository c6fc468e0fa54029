"""Build small stacks for tests without going through a spec file: a ModelSpec, as a spec's model: block holds it."""

from __future__ import annotations

from orderlab.encodings import EncodingContext, build_encoding
from orderlab.models.attention_stack import AttentionStack, StackConfig, seeded_weights
from orderlab.models.stack_builder import build_stack, stack_config
from orderlab.spec.schema import ModelSpec


def config_of(**model) -> StackConfig:
    """The stack's config for a model: block's fields (the spec's defaults for the rest)."""
    return stack_config(ModelSpec(**model))


def make_stack(encoding: str = "none", seed: int = 0, max_len: int = 512, **model) -> AttentionStack:
    """The model's stack with seeded weights under a freshly built encoding for sentences of up to max_len words."""
    spec = ModelSpec(**model)
    context = EncodingContext(
        d_model=spec.d_model, n_heads=spec.n_heads, causal=spec.causal, seed=seed, dtype=spec.dtype, max_len=max_len
    )
    return build_stack(spec, build_encoding(encoding, context), seeded_weights(stack_config(spec), seed))
