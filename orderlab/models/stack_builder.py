"""The attention stack from a spec: the stack itself, its config, its layer weights, and the word vectors it reads.

One place reads ModelSpec for the stack (stack_config), and one function builds it (build_stack), so every caller
(the adapters, training, trace, properties) builds the same stack from the same spec.
"""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import torch

from orderlab.core.text import random_word_vector, sentence_vectors
from orderlab.encodings.encoding import PositionalEncoding
from orderlab.models.attention_stack import AttentionStack, LayerWeights, StackConfig, explicit_weights, seeded_weights
from orderlab.spec.schema import ExplicitEmbeddings, ModelSpec, Spec


def build_stack(
    model: ModelSpec,
    encoding: PositionalEncoding,
    weights: list[LayerWeights],
    device: torch.device | str = "cpu",
    dtype: str | None = None,
) -> AttentionStack:
    """The model's stack under `encoding` with `weights` (the spec's: layer_weights; or trained ones), on `device`,
    in `dtype` where it is not the model's (training's float32, the round-off twin's other precision)."""
    return AttentionStack(stack_config(model, dtype), encoding, weights, device)


def stack_config(model: ModelSpec, dtype: str | None = None) -> StackConfig:
    """The stack's plain config: the model's fields of the same names (a concrete model: no sweep lists left)."""
    values = {field.name: getattr(model, field.name) for field in fields(StackConfig)}
    return StackConfig(**values | ({} if dtype is None else {"dtype": dtype}))


def layer_weights(spec: Spec) -> list[LayerWeights]:
    """The spec's layer weights: its explicit projections, or seeded ones."""
    config, w = stack_config(spec.stack), spec.stack.weights
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
