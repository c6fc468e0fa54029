"""A pretrained encoder (backends/pretrained.py) as adapters: one per position ablation, sharing one loaded model.

A word's state is the mean of its sub-tokens' states; a reordering moves whole words and leaves
[CLS] and [SEP] in place (backends/grouping.py). Sentence vectors are sentence-transformers' mean
over all tokens and the [CLS] state. The ablation is applied to the shared model's position table
(in memory, never on disk) before each pass that needs another one.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import numpy as np
import torch

from orderlab import metrics as M
from orderlab.backends.grouping import WordTokens
from orderlab.backends.pooling import cls, word_states
from orderlab.backends.pretrained import PretrainedBackend, model_folder
from orderlab.backends.specs import CorpusInputs, HFModelSpec, PretrainedModelSpec
from orderlab.estimate import PRETRAINED_CHUNK as CHUNK
from orderlab.metric_registry import (
    ATTENTION_FAMILY,
    COSINE_CLS,
    COSINE_MEAN,
    INVARIANCE_CLS,
    INVARIANCE_MEAN,
    PAIR_COSINE_CLS,
)
from orderlab.models.protocol import Adapter, Pass
from orderlab.spec import DecodabilitySpec, Spec
from orderlab.verdicts import twin_dtype

POOLINGS = ("mean", "cls")  # sentence-transformers' mean over all tokens, and the [CLS] state
WORDS_DRAWN_FROM = 20_000  # the decodability probe's random words come from the vocabulary's first whole words


def pretrained_adapters(spec: Spec, device: torch.device, spec_file: Path) -> list[Adapter]:
    """One adapter per position ablation, in label order, all on one loaded model (and one twin)."""
    assert isinstance(spec.model, PretrainedModelSpec | HFModelSpec) and not isinstance(spec.inputs, CorpusInputs)
    backend = PretrainedBackend(
        model_folder(spec.model, spec_file), spec.model.dtype, str(device), attention=ATTENTION_FAMILY in spec.metrics
    )
    shared = Shared(backend, spec.seed)
    return [PretrainedAdapter(shared, ablation) for ablation in sorted(spec.model.position_embeddings)]


class Shared:
    """The loaded model, its round-off twin (made when first asked for) and the seed of the ablations."""

    def __init__(self, backend: PretrainedBackend, seed: int):
        self.backend, self.seed = backend, seed
        self.twin_backend: PretrainedBackend | None = None

    def twin(self) -> Shared:
        if self.twin_backend is None:
            self.twin_backend = self.backend.twin(twin_dtype(str(self.backend.dtype).removeprefix("torch.")))
        return Shared(self.twin_backend, self.seed)


class PretrainedAdapter:
    """One position ablation of the shared model."""

    invariance: ClassVar[dict[str, str]] = {INVARIANCE_MEAN: "mean", INVARIANCE_CLS: "cls"}
    cosine: ClassVar[dict[str, str]] = {COSINE_MEAN: "mean", COSINE_CLS: "cls"}
    pair_cosine: ClassVar[dict[str, str]] = {PAIR_COSINE_CLS: "cls"}

    def __init__(self, shared: Shared, ablation: str):
        self.shared, self.label = shared, ablation
        self.dtype, self.device = shared.backend.dtype, shared.backend.device

    @property
    def backend(self) -> PretrainedBackend:
        """The model, with this adapter's ablation in its position table."""
        backend = self.shared.backend
        if backend.ablation != self.label:
            backend.set_positions(self.label, self.shared.seed)
        return backend

    def sentence(self, words: list[str]) -> PretrainedSentence:
        return PretrainedSentence(self, words)

    def twin(self) -> PretrainedAdapter:
        return PretrainedAdapter(self.shared.twin(), self.label)

    def chunk_size(self, n: int, attention: bool) -> int:
        return CHUNK

    def random_sentences(self, probe: DecodabilitySpec, seed: int) -> list[torch.Tensor]:
        """Seeded sentences of whole-word tokens (each word one token), so that slot i is word i."""
        backend = self.backend
        vocabulary = whole_words(backend)
        generator = np.random.Generator(np.random.PCG64(seed))
        chosen = generator.choice(len(vocabulary), size=min(probe.vocabulary, len(vocabulary)), replace=False)
        words = np.array(vocabulary)[np.sort(chosen)]
        sentences = generator.integers(0, len(words), size=(probe.sentences, probe.length))  # (S, n)
        tokens = [backend.word_tokens([str(words[k]) for k in row]) for row in sentences]
        states: list[list[torch.Tensor]] = []
        for start in range(0, len(tokens), CHUNK):
            part = tokens[start : start + CHUNK]
            output = backend.forward(torch.tensor([t.ids for t in part]))
            pooling = torch.from_numpy(np.stack([t.pooling() for t in part]))
            states.append([word_states(h, pooling) for h in output.hidden])
        return [torch.cat(layer) for layer in zip(*states, strict=True)]


def whole_words(backend: PretrainedBackend) -> list[str]:
    """Alphabetic vocabulary entries that the tokenizer keeps as one token (no '##' pieces, no specials)."""
    vocabulary = sorted(backend.tokenizer.get_vocab().items(), key=lambda item: item[1])[:WORDS_DRAWN_FROM]
    return [word for word, _ in vocabulary if word.isalpha() and word.isascii() and len(word) > 1]


class PretrainedSentence:
    """A sentence's tokens, moved word by word."""

    def __init__(self, adapter: PretrainedAdapter, words: list[str]):
        self.adapter, self.words = adapter, words
        self.tokens: WordTokens = adapter.shared.backend.word_tokens(words)

    def forward(self, orders: torch.Tensor, attention: bool) -> Pass:
        moved = [self.tokens.permuted(tuple(p)) for p in orders.tolist()]
        output = self.adapter.backend.forward(torch.tensor([t.ids for t in moved]), attention=attention)
        pooling = torch.from_numpy(np.stack([t.pooling() for t in moved]))  # (B, n_words, T)
        hidden = [word_states(h, pooling) for h in output.hidden]  # L+1 x (B, n, d)
        pooled = {"mean": [M.pool(h, "mean") for h in output.hidden], "cls": [cls(h) for h in output.hidden]}
        return Pass(hidden, pooled, output.attention)

    def attention_slots(self, orders: torch.Tensor) -> torch.Tensor:
        slots = [self.tokens.token_permutation(tuple(p)) for p in orders.tolist()]
        return torch.tensor(slots, device=orders.device)  # (B, T)
