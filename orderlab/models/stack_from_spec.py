"""The attention stack's parts from a spec: its config, its layer weights, and the word vectors it reads.

One place reads ModelSpec for the stack, so every caller (the adapters, training, trace, properties) builds the
same stack from the same spec.
"""

from __future__ import annotations

import numpy as np
import torch

from orderlab.models.attention_stack import LayerWeights, StackConfig, explicit_weights, seeded_weights
from orderlab.spec.schema import ExplicitEmbeddings, Spec
from orderlab.spec.text import random_word_vector, sentence_vectors


def stack_config(spec: Spec) -> StackConfig:
    m = spec.stack
    return StackConfig(
        d_model=m.d_model, n_heads=m.n_heads, n_layers=m.n_layers, residual=m.residual, norm=m.norm,
        ffn=m.ffn, ffn_mult=m.ffn_mult, causal=m.causal, scale=m.scale, dtype=m.dtype,
    )  # fmt: skip


def layer_weights(spec: Spec, config: StackConfig) -> list[LayerWeights]:
    w = spec.stack.weights
    if w is None:
        return seeded_weights(config, spec.seed)
    return explicit_weights(config, spec.seed, w.W_Q, w.W_K, w.W_V, w.W_O)


def word_vectors(spec: Spec, words: list[str]) -> torch.Tensor:
    """(n, d) float64 vectors of a tokenized sentence: seeded per word, or the spec's explicit ones."""
    explicit = spec.embeddings.vectors if isinstance(spec.embeddings, ExplicitEmbeddings) else None
    return torch.from_numpy(sentence_vectors(words, spec.stack.d_model, spec.seed, explicit))


def random_sentences(count: int, length: int, vocabulary: int, d_model: int, seed: int) -> torch.Tensor:
    """(count, length, d_model) float64: words drawn with replacement from `vocabulary` seeded random words."""
    words = np.stack([random_word_vector(f"word{k}", seed, d_model) for k in range(vocabulary)])  # (V, d)
    choice = np.random.Generator(np.random.PCG64(seed)).integers(0, vocabulary, size=(count, length))  # (S, n)
    return torch.from_numpy(words[choice])
