"""What the tests of a causal LM's prefix walk share: a five-word sentence and its 120 orders in label order, the
causal families, a tiny seeded spec of one of them, and the calls a pass makes of its model."""

from __future__ import annotations

import itertools
from typing import Any

import torch

from orderlab.families import FAMILIES
from orderlab.spec.schema import Spec

CAUSAL = [family.name for family in FAMILIES.values() if family.causal]
WORDS = ["the", "dog", "bit", "a", "man"]
ORDERS = torch.tensor(list(itertools.permutations(range(len(WORDS)))))  # 120, in label order: 5, 20, 60, 120, 120


def lm_spec(family: str, metrics: list[str], words: list[str] = WORDS, dtype: str = "float32") -> Spec:
    """A 2-layer seeded model of `family` under every ablation it declares exact with a KV cache, all orders."""
    return Spec.model_validate({
        "model": {"kind": "hf", "family": family, "d_model": 32, "n_heads": 2, "n_layers": 2, "dtype": dtype,
                  "position_embeddings": list(FAMILIES.get(family).cached_ablations)},
        "inputs": [{"sentence": " ".join(words), "permutations": "all"}],
        "metrics": metrics,
    })  # fmt: skip


def fed_tokens(sentence: Any, orders: torch.Tensor) -> tuple[Any, list[int]]:
    """The sentence's pass over `orders`, and the tokens its model was fed, call by call."""
    fed: list[int] = []
    embeddings = sentence.adapter.shared.backend.model.get_input_embeddings()
    handle = embeddings.register_forward_hook(lambda _m, args, _out: fed.append(args[0].numel()))
    try:
        with torch.inference_mode():
            return sentence.forward(orders), fed
    finally:
        handle.remove()
