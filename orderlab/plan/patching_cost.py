"""What a spec's `patching:` block will cost (orderlab.api.patch, measure/patching.py), priced beside the run's own
estimate: per condition and pair of orders, one recording pass of the two orders and one pass per hook name holding
every slot group's patched run, all twice (the round-off twin's too). A sequence costs what one of the run's own
forward passes costs on the same model (its loading aside: paid once). Pure and torch-free, as every plan module.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from orderlab.core import permutations as perms
from orderlab.core.text import tokenize
from orderlab.plan.cost import Estimate
from orderlab.plan.pretrained_cost import LOADING, backend_shape
from orderlab.spec.model_specs import CorpusInputs
from orderlab.spec.schema import Spec, uses_backend
from orderlab.spec.sweep import plan

TWICE = 2  # every patch measured again by the round-off twin


@dataclass(frozen=True)
class PatchingCost:
    """The patching block's work over the whole spec: sequences through the model, forward passes, rows, seconds."""

    sequences: int
    passes: int
    rows: int
    seconds: float


def patching_cost(spec: Spec, spec_file: str | Path, estimates: list[Estimate]) -> PatchingCost | None:
    """None without a patching block (or with a corpus: the run refuses it); each sweep combination's sequences priced
    at its own estimate's seconds per sequence."""
    block = spec.patching
    if block is None or isinstance(spec.inputs, CorpusInputs):
        return None
    sequences = passes = rows = 0
    seconds = 0.0
    for configuration, estimate in zip(plan(spec), estimates, strict=True):
        concrete = configuration.spec
        layers = _n_layers(concrete, Path(spec_file)) if block.layers == "all" else len(block.layers)
        names, conditions = layers * len(block.points), _n_conditions(concrete)
        own = 0
        for words, pairs in _pairs(concrete):
            groups = len(words) + 1 if block.slots == "each" else 1 if block.slots == "all" else len(block.slots)
            own += TWICE * conditions * pairs * (2 + names * groups)
            passes += TWICE * conditions * pairs * (1 + names)
            rows += conditions * pairs * names * groups
        sequences += own
        forward = sum(cost.amount for cost in estimate.seconds if cost.what != LOADING)  # the model is loaded already
        seconds += own * forward / max(estimate.sequences, 1)
    return PatchingCost(sequences, passes, rows, seconds)


def _n_layers(spec: Spec, spec_file: Path) -> int:
    """The model's layers: a transformers model's from its shape, the stack's from the spec."""
    return backend_shape(spec, spec_file).n_layers if uses_backend(spec) else int(spec.stack.n_layers)


def _n_conditions(spec: Spec) -> int:
    """The conditions patched: a transformers model's position ablations, the stack's encodings."""
    return len(spec.pretrained.position_embeddings) if uses_backend(spec) else len(spec.encodings)


def _pairs(spec: Spec) -> list[tuple[list[str], int]]:
    """Each distinct input's words and how many pairs of orders it patches (its reorderings, the identity aside, or
    the block's pairs)."""
    block = spec.patching
    assert block is not None
    rules: dict[str, list[perms.Rule]] = {}
    for item in spec.sentences:
        rules.setdefault(item.sentence, []).append(item.permutations)
    found = []
    for sentence, named in rules.items():
        words = tokenize(sentence, spec.embeddings.lowercase)
        count = sum(perms.count(rule, words) for rule in named) if block.pairs == "reorderings" else len(block.pairs)
        found.append((words, count))
    return found
