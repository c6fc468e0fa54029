"""What a run writes, counted as the measuring loop writes it, for both cost models (stack_cost.py,
pretrained_cost.py): the reorderings that keep the last word, what the loop has for a sentence, the position probe's
rows, and attention.csv's rows and bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

from orderlab.core import permutations as perms
from orderlab.core.text import repeated_pairs, tokenize
from orderlab.metrics import ATTENTION_FAMILY, Needs
from orderlab.plan.cost import Cost
from orderlab.plan.rates import ATTENTION_ROW_FIXED_BYTES, PROBE_COLUMN_BYTES, ROW_FIXED_BYTES
from orderlab.spec.model_specs import CorpusInputs
from orderlab.spec.schema import DatasetInputs, DecodabilitySpec, Spec


def kept_last(rule: perms.Rule, words: list[str], sure: bool) -> float:
    """Permutations of the rule that keep the last word in place (prefix_invariance rows); random: expected."""
    n = len(words)
    if rule in ("all", "prefixes"):
        return perms.sentences(words[:-1])
    if rule == "identity":
        return 1
    if rule == "swaps":
        return perms.count(rule, words[:-1])
    if isinstance(rule, list):
        return sum(1 for p in rule if p and p[-1] == n - 1)
    if rule in ("reverse", "shifts"):
        return 0
    return 0 if sure else perms.count(rule, words) / n  # drawn: 1/n of the draws, but a draw may miss them all


def reordering_needs(words: list[str], causal: bool = False) -> list[Needs]:
    """What the loop has for a sentence's reorderings: attention maps (when the attention family asks for them),
    repeated words if the sentence repeats one, a causal LM's log-probabilities."""
    have: list[Needs] = ["attention maps"]
    if repeated_pairs(words):
        have.append("repeated words")
    if causal:
        have.append("log-probabilities")
    return have


def probe_row_bytes(probe: DecodabilitySpec) -> int:
    """A probe row's bytes without the encoding and swept columns: its input names the random sentences, and it
    fills the length, slot and chance columns that runs with probe rows add to every row."""
    return ROW_FIXED_BYTES + len(f"{probe.sentences} random sentences of {probe.length} words") + PROBE_COLUMN_BYTES


def probe_rows_per_layer(length: int) -> int:
    """The position probe's rows per layer and condition: position_accuracy, position_chance, and
    position_slot_accuracy once per slot (probing.measure_decodability)."""
    return 2 + length


@dataclass(frozen=True)
class AttentionCsv:
    """attention.csv's rows and bytes, and the shown sentence they come from (what else the maps cost grows with)."""

    rows: float
    bytes: Cost
    words: int  # the shown sentence's
    maps: int  # the input as written, then each shown reordering


def attention_csv(
    spec: Spec, conditions: int, layers: int, heads: int, extra_width: float, lowercase: bool = False
) -> AttentionCsv:
    """attention.csv (measure/attention_maps.py): the shown input as written and reordered, for every condition (the
    stack's encodings, a model's position ablations), layer and head, between words (a model's sub-tokens grouped,
    its specials left out). extra_width: each row's condition label and swept columns."""
    shown = spec.attention_maps
    where, expected = ("inputs", shown.input, "sentence"), "a shorter sentence, or metrics without attention"
    if ATTENTION_FAMILY not in spec.metrics or isinstance(spec.inputs, CorpusInputs | DatasetInputs) or not spec.inputs:
        return AttentionCsv(0, Cost(0, "attention.csv", where, "the shown sentence", expected), 0, 0)
    n = len(tokenize(spec.sentences[shown.input].sentence, lowercase))
    maps = 1 + (len(shown.permutations) if shown.permutations is not None else 1)  # as written, then reordered
    rows = maps * conditions * layers * heads * n * n
    digits = 2 * len(str(n - 1)) + len(str(layers)) + len(str(heads - 1)) + len(str(maps - 1))
    cost = Cost(rows * (ATTENTION_ROW_FIXED_BYTES + digits + extra_width), "attention.csv", where,
                "the shown sentence", expected)  # fmt: skip
    return AttentionCsv(rows, cost, n, maps)
