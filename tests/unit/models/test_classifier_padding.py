"""A classifier's sequences tokenized once and padded batch by batch (models/hf/classifier.ClassifierBackend.encoded
and .run) give the model the very tensors the tokenizer gives when it tokenizes and pads the batch itself, so the
logits are the same bits: single sentences and pairs, padded right (BERT's side) or left."""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")

from orderlab.models.hf.classifier import ClassifierBackend  # noqa: E402
from orderlab.models.hf.loader import Seeded  # noqa: E402

WORDS = "a b c d e f g h".split()
TEXTS = [WORDS[:3], WORDS[2:8], ["h", "a"], WORDS[::-1]]  # of mixed lengths: every batch pads
PAIRS = [WORDS[:2], ["c"], WORDS[1:6], ["d", "e"]]


@pytest.fixture(scope="module")
def backend() -> ClassifierBackend:
    return ClassifierBackend(Seeded(16, 2, 1, tuple(WORDS), 0), "bert", id2label=("no", "yes"))


@pytest.mark.parametrize("side", ["right", "left"])
@pytest.mark.parametrize("pairs", [None, PAIRS], ids=["single", "pair"])
def test_a_batch_padded_from_its_ids_is_the_batch_the_tokenizer_pads(
    backend: ClassifierBackend, side: str, pairs: list[list[str]] | None
):
    tokenizer, seen = backend.tokenizer, []
    tokenizer.padding_side = side
    handle = backend.model.register_forward_pre_hook(lambda _model, _args, kwargs: seen.append(kwargs),
                                                     with_kwargs=True)  # fmt: skip
    try:
        found = backend.logits(TEXTS, pairs)
        expected = tokenizer(TEXTS, pairs, is_split_into_words=True, padding=True, return_tensors="pt")
    finally:
        handle.remove()
        tokenizer.padding_side = "right"
    assert sorted(seen[0]) == sorted(expected)
    for key, value in expected.items():
        assert seen[0][key].dtype == value.dtype and torch.equal(seen[0][key], value), key
    assert (seen[0]["attention_mask"] == 0).any()  # padded, and on the side asked
    assert bool((seen[0]["attention_mask"][:, 0 if side == "left" else -1] == 0).any())
    with torch.inference_mode():
        assert torch.equal(found, backend.model(**expected).logits.double())
