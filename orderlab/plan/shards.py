"""A run's work as units in metrics.csv's order, and its partition into N shards that together do it exactly once.

A unit is one sweep combination's position probe, one sentence under one condition (a range of its
permutations in label order), or the combination's probe pairs. Laid end to end in the order their rows
appear, they are cut into N contiguous pieces of near-equal work; a sentence's permutations may be cut
anywhere (permutations.in_label_order_range unranks the start), the other units go whole to the shard in
which they begin. So shard K's rows are a contiguous stretch of the unsharded metrics.csv, and a merge
is a concatenation plus the summaries of the sentences that a cut split. Pure and torch-free: computes
no numbers, only who does what.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from orderlab.core import permutations as perms
from orderlab.core.text import tokenize
from orderlab.errors import OrderlabError
from orderlab.metrics import DECODABILITY_FAMILY
from orderlab.spec.model_specs import CorpusInputs
from orderlab.spec.schema import DatasetInputs, ModelSpec, Spec
from orderlab.spec.sweep import in_row_order

DECODABILITY, PERMUTATIONS, PROBES = "decodability", "permutations", "probes"
MAX_SHARDS = 100_000  # past this a shard count is more likely a typo than a cluster


@dataclass(frozen=True)
class Unit:
    """A piece of a run's work; `combination` indexes the sweep's combinations in row order (sweep.in_row_order)."""

    combination: int
    kind: str  # DECODABILITY | PERMUTATIONS | PROBES
    sentence: str = ""  # PERMUTATIONS: the input
    condition: str = ""  # PERMUTATIONS: the encoding (or position ablation) label
    start: int = 0  # PERMUTATIONS: this shard's permutations are those at index start..stop-1 in label order
    stop: int = 0
    total: int = 0  # PERMUTATIONS: how many the sentence has; the ranges of all shards tile 0..total
    weight: int = 0  # sequences through the model, for balancing the shards

    @property
    def segment(self) -> tuple[int, str, str, str]:
        """What the unit is a part of: shards holding parts of one segment each hold a partial summary of it."""
        return (self.combination, self.kind, self.sentence, self.condition)

    def record(self) -> dict[str, Any]:
        """As a shard manifest lists it."""
        return asdict(self)


def condition_labels(spec: Spec) -> list[str]:
    """The `encoding` column's values: the stack's encodings, or a pretrained model's position ablations' labels."""
    if isinstance(spec.model, ModelSpec):
        return [spec.model.hooked_label(choice.label) for choice in spec.encodings]
    return spec.model.labels


def work(spec: Spec) -> list[Unit]:
    """Every unit of a run, whole, in the order its rows appear in metrics.csv."""
    units = []
    for index, configuration in enumerate(in_row_order(spec)):
        concrete = configuration.spec
        conditions = sorted(condition_labels(concrete))  # adapters run in label order (orderlab/models)
        if DECODABILITY_FAMILY in concrete.metrics:
            weight = len(conditions) * concrete.decodability.sentences
            units.append(Unit(index, DECODABILITY, weight=weight))
        rules: dict[str, list[perms.Rule]] = {}
        for item in concrete.sentences:
            rules.setdefault(item.sentence, []).append(item.permutations)
        for sentence in sorted(rules):
            words = tokenize(sentence, concrete.embeddings.lowercase)
            total = sum(perms.count(rule, words) for rule in rules[sentence])
            for condition in conditions:
                units.append(Unit(index, PERMUTATIONS, sentence, condition, 0, total, total, total))
        if concrete.probes:
            units.append(Unit(index, PROBES, weight=len(conditions) * len(concrete.probes)))
    return units


def partition(spec: Spec, count: int) -> list[list[Unit]]:
    """The units of each of `count` shards: contiguous, near-equal in weight, together the whole run once."""
    units = work(spec)
    total = sum(unit.weight for unit in units)
    bounds = [total * k // count for k in range(count + 1)]
    shards: list[list[Unit]] = [[] for _ in range(count)]
    offset = 0
    for unit in units:
        if unit.kind == PERMUTATIONS:
            for k in range(count):
                low, high = max(bounds[k], offset), min(bounds[k + 1], offset + unit.weight)
                if low < high:
                    start, stop = low - offset, high - offset
                    shards[k].append(replace(unit, start=start, stop=stop, weight=stop - start))
        else:  # whole, to the shard in which it begins
            owner = next((k for k in range(count) if offset < bounds[k + 1]), count - 1)
            shards[owner].append(unit)
        offset += unit.weight
    return shards


def opened_combinations(units: list[Unit], spec: Spec) -> set[int]:
    """The combinations a shard's units begin: that shard also does each one's work that is not cut into units (a
    causal LM's token_logprobs.csv rows), so that exactly one shard does it."""
    firsts: dict[int, Unit] = {}
    for unit in work(spec):
        firsts.setdefault(unit.combination, unit)
    return {unit.combination for unit in units if unit.start == 0 and unit.segment == firsts[unit.combination].segment}


def require_shardable(spec: Spec, path: Path) -> None:
    """Corpus mode (a file of sentences, orderlab/backends) and training (each shard would train every stack
    again) have no units yet: refuse to shard them, in one line."""
    if isinstance(spec.inputs, CorpusInputs):
        raise OrderlabError(f"{path}: a corpus-mode spec cannot be sharded yet; expected sentence inputs")
    if isinstance(spec.inputs, DatasetInputs):
        raise OrderlabError(f"{path}: a spec with dataset inputs cannot be sharded yet; expected sentence inputs")
    if spec.train is not None:
        raise OrderlabError(f"{path}: a spec with train: cannot be sharded yet; expected a spec without training")


def parse_shard(text: str) -> tuple[int, int]:
    """'K/N' -> (K, N), 1-based; one line for anything else (digits are counted before int() reads them: Python
    refuses to read integers past 4300 digits with an error of its own)."""
    match = re.fullmatch(r"\s*(\d{1,9})\s*/\s*(\d{1,9})\s*", text[:100])
    if match is None or not 1 <= int(match[1]) <= int(match[2]) <= MAX_SHARDS:
        shown = repr(text) if len(text) <= 40 else f"{text[:20]!r}... ({len(text):,} characters)"
        raise OrderlabError(f"--shard: {shown} is not K/N; expected 1 <= K <= N <= {MAX_SHARDS:,}, like 2/8")
    return int(match[1]), int(match[2])


def shard_folder_name(spec_name: str, index: int, count: int) -> str:
    """Where shard K of N of a spec goes under the results root: <name>.shard-K-of-N."""
    return f"{spec_name}.shard-{index}-of-{count}"
