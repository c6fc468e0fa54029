"""Position decodability: can a linear probe read a token's slot off its hidden state at layer l?

Many seeded random sentences go through the same model the spec measures (an adapter's
`random_sentences`: seeded word vectors for the stack, whole-word tokens for a pretrained model); a ridge least-squares
classifier (closed form, one-hot targets, bias) is fit per layer on the states of most sentences
and scored on the held-out rest. Sentences are split whole, so scoring never sees a training
sentence. Chance is 1/length. Rows are per (encoding, layer), not per input: case "decodability".
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import torch

from orderlab.measure.rows import COLUMNS
from orderlab.spec.metric_names import POSITION_ACCURACY, POSITION_CHANCE
from orderlab.spec.schema import Spec
from orderlab.spec.text import random_word_vector

if TYPE_CHECKING:
    from orderlab.models.adapter_protocol import Adapter

RIDGE = 1e-6  # relative to the mean feature variance: only there to keep the solve well posed
ABOVE_CHANCE, AT_CHANCE, CHANCE = "above chance", "at chance", "chance level"


def random_sentences(count: int, length: int, vocabulary: int, d_model: int, seed: int) -> torch.Tensor:
    """(count, length, d_model) float64: words drawn with replacement from `vocabulary` seeded random words."""
    words = np.stack([random_word_vector(f"word{k}", seed, d_model) for k in range(vocabulary)])  # (V, d)
    choice = np.random.Generator(np.random.PCG64(seed)).integers(0, vocabulary, size=(count, length))  # (S, n)
    return torch.from_numpy(words[choice])


def fit_probe(features: torch.Tensor, slots: torch.Tensor, classes: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Ridge least squares onto one-hot slots: (N, d), (N,) -> weights (d, C), bias (C,)."""
    mean = features.mean(dim=0)  # (d,)
    centred = features - mean  # (N, d)
    targets = torch.nn.functional.one_hot(slots, classes).to(features)  # (N, C)
    gram = centred.T @ centred  # (d, d)
    ridge = RIDGE * max(gram.diagonal().mean().item(), 1e-30)
    weights = torch.linalg.solve(gram + ridge * torch.eye(gram.shape[0], dtype=gram.dtype), centred.T @ targets)
    return weights, targets.mean(dim=0) - mean @ weights


def probe_accuracy(hidden: torch.Tensor, train: int) -> float:
    """Fit on sentences [:train], score on the rest; hidden: (S, n, d) states of one layer."""
    count, length, _ = hidden.shape
    slots = torch.arange(length).expand(count, length)  # (S, n)
    features = hidden.double().cpu()
    weights, bias = fit_probe(features[:train].flatten(0, 1), slots[:train].flatten(), length)
    predicted = (features[train:] @ weights + bias).argmax(dim=-1)  # (S - train, n)
    return (predicted == slots[train:]).double().mean().item()


def above_chance(accuracy: float, chance: float, scored: int) -> bool:
    """More than three binomial standard deviations above chance over `scored` tokens."""
    return accuracy > chance + 3 * math.sqrt(chance * (1 - chance) / scored)


def measure_decodability(spec: Spec, adapters: list[Adapter]) -> pd.DataFrame:
    """Held-out probe accuracy and chance per condition (encoding or ablation) and layer, as tidy rows (COLUMNS)."""
    probe = spec.decodability
    train = probe.training_sentences
    chance, scored = 1 / probe.length, (probe.sentences - train) * probe.length
    subject = f"{probe.sentences} random sentences of {probe.length} words"
    rows = []
    with torch.inference_mode():
        for adapter in adapters:
            for layer, hidden in enumerate(adapter.random_sentences(probe, spec.seed)):
                accuracy = probe_accuracy(hidden, train)
                verdict = ABOVE_CHANCE if above_chance(accuracy, chance, scored) else AT_CHANCE
                common = {"case": "decodability", "input": subject, "encoding": adapter.label, "permutation": "",
                          "permuted": "", "layer": layer, "head": None}  # fmt: skip
                rows.append({**common, "metric": POSITION_ACCURACY, "value": accuracy, "verdict": verdict})
                rows.append({**common, "metric": POSITION_CHANCE, "value": chance, "verdict": CHANCE})
    frame = pd.DataFrame(rows, columns=COLUMNS)
    frame["head"] = frame["head"].astype("Int64")
    return frame
