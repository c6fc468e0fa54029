"""Position decodability: can a linear probe read a token's slot off its hidden state at layer l?

Many seeded sentences go through the same model the spec measures (an adapter's `random_sentences`: seeded
word vectors for the stack, whole-word tokens for a pretrained model; with `decodability.from_task`, the
train: task's own sentences); a ridge least-squares classifier (closed form, one-hot targets, bias) is fit per
layer on the states of most sentences and scored on the held-out rest. Sentences are split whole, so scoring
never sees a training sentence. Chance is 1/length. Rows are per (encoding, layer), not per input: case
"decodability"; beside the accuracy over all slots, one row per slot, so that a probe above chance because
slot 0 stands out reads apart from one that tells every slot.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import pandas as pd
import torch

from orderlab.metrics import POSITION_ACCURACY, POSITION_CHANCE, POSITION_SLOT_ACCURACY
from orderlab.spec.schema import Spec
from orderlab.vocabulary.columns import COLUMNS, DETAIL_COLUMNS, detail_number

if TYPE_CHECKING:
    from orderlab.models.adapter_protocol import Adapter

RIDGE = 1e-6  # relative to the mean feature variance: only there to keep the solve well posed
ABOVE_CHANCE, AT_CHANCE, CHANCE = "above chance", "at chance", "chance level"


def fit_probe(features: torch.Tensor, slots: torch.Tensor, classes: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Ridge least squares onto one-hot slots: (N, d), (N,) -> weights (d, C), bias (C,)."""
    mean = features.mean(dim=0)  # (d,)
    centred = features - mean  # (N, d)
    targets = torch.nn.functional.one_hot(slots, classes).to(features)  # (N, C)
    gram = centred.T @ centred  # (d, d)
    ridge = RIDGE * max(gram.diagonal().mean().item(), 1e-30)
    weights = torch.linalg.solve(gram + ridge * torch.eye(gram.shape[0], dtype=gram.dtype), centred.T @ targets)
    return weights, targets.mean(dim=0) - mean @ weights


def probe_hits(hidden: torch.Tensor, train: int) -> torch.Tensor:
    """Fit on sentences [:train], score on the rest: (S - train, n) float64, 1 where a slot was told right;
    hidden: (S, n, d) states of one layer."""
    count, length, _ = hidden.shape
    slots = torch.arange(length).expand(count, length)  # (S, n)
    features = hidden.double().cpu()
    weights, bias = fit_probe(features[:train].flatten(0, 1), slots[:train].flatten(), length)
    predicted = (features[train:] @ weights + bias).argmax(dim=-1)  # (S - train, n)
    return (predicted == slots[train:]).double()


def above_chance(accuracy: float, chance: float, scored: int) -> bool:
    """More than three binomial standard deviations above chance over `scored` tokens."""
    return accuracy > chance + 3 * math.sqrt(chance * (1 - chance) / scored)


def measure_decodability(spec: Spec, adapters: list[Adapter]) -> pd.DataFrame:
    """Held-out probe accuracy (over all slots and per slot) and chance per condition (encoding or ablation) and
    layer, as tidy rows (COLUMNS and DETAIL_COLUMNS)."""
    probe = spec.decodability
    train, held_out = probe.training_sentences, probe.sentences - probe.training_sentences
    chance = 1 / probe.length
    sentences = f"{spec.train.task} sentences" if probe.from_task and spec.train else "random sentences"
    subject = f"{probe.sentences} {sentences} of {probe.length} words"
    detail = {"length": probe.length, "slot": None, "chance": detail_number(chance)}
    rows = []
    with torch.inference_mode():
        for adapter in adapters:
            for layer, hidden in enumerate(adapter.random_sentences(probe, spec.seed)):
                hits = probe_hits(hidden, train)  # (held-out sentences, n)
                common = {"case": "decodability", "input": subject, "encoding": adapter.label, "permutation": "",
                          "permuted": "", "layer": layer, "head": None, **detail}  # fmt: skip
                accuracy = hits.mean().item()
                rows.append({**common, "metric": POSITION_ACCURACY, "value": accuracy,
                             "verdict": _verdict(accuracy, chance, hits.numel())})  # fmt: skip
                rows.append({**common, "metric": POSITION_CHANCE, "value": chance, "verdict": CHANCE})
                for slot, accuracy in enumerate(hits.mean(dim=0).tolist()):
                    rows.append({**common, "slot": slot, "metric": POSITION_SLOT_ACCURACY, "value": accuracy,
                                 "verdict": _verdict(accuracy, chance, held_out)})  # fmt: skip
    frame = pd.DataFrame(rows, columns=[*COLUMNS, *DETAIL_COLUMNS])
    return frame.astype({"head": "Int64", "length": "Int64", "slot": "Int64"})


def _verdict(accuracy: float, chance: float, scored: int) -> str:
    return ABOVE_CHANCE if above_chance(accuracy, chance, scored) else AT_CHANCE
