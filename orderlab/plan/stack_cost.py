"""The attention stack's cost: one concrete spec's (every model field one value) memory, sequences, time and output
on a device, counted as measure/loop.py runs it.

The formulas follow the code they describe: the loop's chunks (plan/chunks.py's `sequence_values` is the one
definition of a sequence's working set), metric_computations.record_metrics' rows, probing.py's position probe,
train/train.py's steps and trace.attention_maps; tests/test_plan.py holds the row counts and CSV sizes against real
runs. Pure and torch-free.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from orderlab.core import permutations as perms
from orderlab.core import shuffles
from orderlab.core.text import occurrence_matching, tokenize
from orderlab.families.family import ModelShape
from orderlab.metrics import (
    ATTENTION_FAMILY,
    DECODABILITY_FAMILY,
    STACK_POOLINGS,
    Compares,
    Keep,
    Needs,
    loop_rows,
)
from orderlab.plan.chunks import ROW_ALIGNMENT, orders_per_pass, sequence_values
from orderlab.plan.cost import Cost, Estimate, forward_seconds
from orderlab.plan.device import Device
from orderlab.plan.escalation_cost import at_built_in_rates, escalation_seconds
from orderlab.plan.rates import (
    ATTENTION_ROW_MEMORY_BYTES,
    FLOPS_PER_SECOND,
    PERMUTATION_BYTES,
    PERMUTATION_BYTES_PER_TOKEN,
    ROW_FIXED_BYTES,
    ROW_MEMORY_BYTES,
    SECONDS_PER_DRAW,
    SECONDS_PER_ROW,
    SECONDS_PER_SEQUENCE,
    SECONDS_PER_STEP,
    SECONDS_PER_WEIGHT,
    SECONDS_PER_WORD,
    TRAINING_FLOPS_PER_SECOND,
    WEIGHT_BYTES,
    itemsize,
)
from orderlab.plan.written import attention_csv, kept_last, probe_row_bytes, probe_rows_per_layer, reordering_needs
from orderlab.spec.schema import DecodabilitySpec, ModelSpec, Spec
from orderlab.spec.sweep import SweptValue, describe

if TYPE_CHECKING:
    from orderlab.spec.yamlsource import FieldPath


def stack_flops(spec: Spec, n: int) -> float:
    """Matmul FLOPs of one n-token sequence, 2 per multiply-add: L * ((8 + 4 m) n d^2 + 4 n^2 d).

    Per layer: q, k, v and output projections 8 n d^2, the FFN's two matmuls 4 m n d^2 (m = ffn_mult,
    0 without an FFN), scores and weights @ v 4 n^2 d. With m = 4: L * (24 n d^2 + 4 n^2 d).
    """
    m = spec.stack
    mult = m.ffn_mult if m.ffn else 0
    return m.n_layers * ((8 + 4 * mult) * n * m.d_model**2 + 4 * n * n * m.d_model)


@dataclass
class _Tally:
    """A stack estimate while it is added up, part by part (inputs, probes, position probe, attention maps)."""

    rows: float = 0.0  # metrics.csv rows, every encoding included
    least_rows: float = 0.0  # the rows however random draws fall
    row_bytes: float = 0.0  # their bytes, without the encoding and swept columns
    sequences: int = 0
    seconds: list[Cost] = field(default_factory=list)
    working: list[Cost] = field(default_factory=list)  # working sets that never coexist: the run holds the largest

    def add_rows(self, rows: float, width: float, least: float | None = None) -> None:
        self.rows, self.row_bytes = self.rows + rows, self.row_bytes + rows * width
        self.least_rows += rows if least is None else least


def stack_estimate(spec: Spec, columns: dict[str, SweptValue], device: Device) -> Estimate:
    """The estimate of one concrete spec (every model field one value) on `device`."""
    m, encodings = spec.stack, len(spec.encodings)
    weights = _weights(spec)
    drawing = weights.amount / 8 * _weight_draws(spec) * SECONDS_PER_WEIGHT
    tally = _Tally(seconds=[Cost(drawing, "drawing the weights", weights.field, weights.subject, weights.expected)])
    _add_inputs(spec, tally, device)
    _add_probes(spec, tally, device)
    passes = sum(cost.amount for cost in tally.seconds[1:])  # the twin re-measures them as the run measured them
    if escalation := escalation_seconds(spec, at_built_in_rates(m.dtype, passes)):
        tally.seconds.append(escalation)
    if DECODABILITY_FAMILY in spec.metrics:
        probe = spec.decodability
        tally.add_rows(encodings * probe_rows_per_layer(probe.length) * (m.n_layers + 1), probe_row_bytes(probe))
        tally.sequences += encodings * probe.sentences
        tally.working.append(_decodability_memory(spec))
        tally.seconds.append(_decodability_seconds(spec))
    labels = sum(len(choice.label) for choice in spec.encodings) / encodings
    swept = sum(len(str(value)) + 1 for value in columns.values())
    attention_rows, attention_bytes = _add_attention(spec, tally, labels + swept)
    per_permutation = spec.rows == "per_permutation"
    metrics_bytes = Cost(tally.row_bytes + tally.rows * (labels + swept), "metrics.csv",
                         ("rows",) if per_permutation else ("inputs",), f"{tally.rows:,.0f} rows",
                         "rows: summary" if per_permutation else "fewer inputs or encodings")  # fmt: skip
    chunk = max((_chunk_bytes(spec, words, rules, device) for _, words, rules in _sentences(spec).values()), default=0)
    largest = max(tally.working, key=lambda c: c.amount, default=Cost(0, "nothing", (), "", ""))
    stack = Estimate(columns, describe(columns), weights, largest, chunk, tally.sequences, tally.seconds, tally.rows,
                     tally.least_rows, metrics_bytes, attention_rows, attention_bytes)  # fmt: skip
    return _trained(spec, stack) if spec.train else stack


def _trained(spec: Spec, untrained: Estimate) -> Estimate:
    """A trained spec: training, then every measurement twice (trained and untrained weights) and its task rows.

    Training: steps x batch sentences at the longest training length, forward and backward (3 forward passes'
    FLOPs) in float32 on one thread, and its activations kept for the backward pass; then the task accuracy
    passes over every test length.
    """
    train, m, encodings = spec.train, spec.stack, len(spec.encodings)
    assert train is not None
    n, tested = train.train_lengths[1], range(train.tested[0], train.tested[1] + 1)
    flops = encodings * train.steps * train.batch * 3 * stack_flops(spec, n)
    flops += encodings * train.test_sentences * sum(stack_flops(spec, length) for length in tested)
    subject = f"{train.steps:,} steps"
    seconds = Cost(flops / TRAINING_FLOPS_PER_SECOND + encodings * train.steps * SECONDS_PER_STEP, "training",
                   ("train", "steps"), subject, "fewer steps or a smaller batch")  # fmt: skip
    activations = 3 * train.batch * sequence_values(n, m.d_model, m.ffn_mult, m.n_layers, m.n_heads, True) * 4
    memory = Cost(activations, "training", ("train", "batch"), f"{train.batch:,} sentences", "a smaller batch")
    task_rows = encodings * len(tested)
    twice = untrained.metrics_bytes
    return replace(
        untrained, working=max(untrained.working, memory, key=lambda cost: cost.amount),
        sequences=2 * untrained.sequences, seconds=[*untrained.seconds, *untrained.seconds, seconds],
        metrics_rows=2 * untrained.metrics_rows + task_rows, least_rows=2 * untrained.least_rows + task_rows,
        metrics_bytes=replace(twice, amount=2 * twice.amount + task_rows * (ROW_FIXED_BYTES + 40)),
        attention_rows=2 * untrained.attention_rows,
        attention_bytes=replace(untrained.attention_bytes, amount=2 * untrained.attention_bytes.amount),
    )  # fmt: skip


def _add_inputs(spec: Spec, tally: _Tally, device: Device) -> None:
    """Each sentence's permutations under every encoding, plus its reference pass f(X)."""
    encodings, m = len(spec.encodings), spec.stack
    for sentence, (index, words, rules) in _sentences(spec).items():
        n = len(words)
        count = sum(perms.count(rule, words) for rule in rules)
        rows, width = _sentence_rows(spec, words, rules, sentence)
        tally.add_rows(encodings * rows, width, encodings * _sentence_rows(spec, words, rules, sentence, sure=True)[0])
        tally.sequences += encodings * (count + 1)
        chunk, _ = _chunk_sequences(spec, n, ATTENTION_FAMILY in spec.metrics, device, count)
        calls = encodings * (math.ceil(count / chunk) + 1)
        flops = encodings * (count + 1) * stack_flops(spec, n)
        seconds = forward_seconds(device, "stack", m.dtype, flops, calls, m.n_layers, FLOPS_PER_SECOND[m.dtype])
        seconds += encodings * (count + 1) * SECONDS_PER_SEQUENCE
        seconds += sum(_random_draws(rule, words) for rule in rules) * SECONDS_PER_DRAW
        tally.seconds.append(Cost(seconds + encodings * rows * SECONDS_PER_ROW, "the permutations' forward passes",
                                  ("inputs", index, "permutations"), f"{count:,} permutations",
                                  "fewer permutations or a smaller model"))  # fmt: skip
        tally.working.append(_chunk_cost(spec, words, rules, rows / max(count, 1), ("inputs", index), device))


def _add_probes(spec: Spec, tally: _Tally, device: Device) -> None:
    """Each probe pair: one pass per sentence and encoding (loop.MeasuringLoop.measure_probe)."""
    encodings, rate = len(spec.encodings), FLOPS_PER_SECOND[spec.model.dtype]
    for index, probe in enumerate(spec.probes):
        sides = [tokenize(side, spec.embeddings.lowercase) for side in probe.pair]
        lengths = [len(words) for words in sides]
        rows, width = _probe_rows(spec, *probe.pair)
        tally.add_rows(encodings * rows, width)
        tally.sequences += 2 * encodings
        seconds = encodings * (sum(stack_flops(spec, n) for n in lengths) / rate + rows * SECONDS_PER_ROW)
        tally.seconds.append(Cost(seconds, "the probes", ("probes", index), "the probe", "shorter probe sentences"))
        for side, words in enumerate(sides):
            tally.working.append(_chunk_cost(spec, words, [], 0, ("probes", index, side), device))


def _add_attention(spec: Spec, tally: _Tally, extra_width: float) -> tuple[float, Cost]:
    """attention.csv (written.attention_csv) and what its maps cost the stack: held whole in memory until written,
    and the passes of the shown reorderings, which the input's rule may not give."""
    m = spec.stack
    shown = attention_csv(spec, len(spec.encodings), m.n_layers, m.n_heads, extra_width, spec.embeddings.lowercase)
    if shown.rows:
        where, subject, expected = shown.bytes.field, f"{shown.words:,} words", shown.bytes.expected
        tally.working.append(Cost(shown.rows * ATTENTION_ROW_MEMORY_BYTES, "attention maps", where, subject, expected))
        passes = shown.maps * len(spec.encodings) * stack_flops(spec, shown.words) / FLOPS_PER_SECOND[m.dtype]
        tally.seconds.append(Cost(shown.rows * SECONDS_PER_ROW + passes, "attention maps", where, subject, expected))
    return shown.rows, shown.bytes


def _sentences(spec: Spec) -> dict[str, tuple[int, list[str], list[perms.Rule]]]:
    """Inputs grouped by sentence as the MeasuringLoop runs them: sentence -> (first input index, words, rules)."""
    groups: dict[str, tuple[int, list[str], list[perms.Rule]]] = {}
    for index, item in enumerate(spec.sentences):
        words = tokenize(item.sentence, spec.embeddings.lowercase)
        groups.setdefault(item.sentence, (index, words, []))[2].append(item.permutations)
    return groups


def _weights(spec: Spec) -> Cost:
    """Seeded float64 weights (FFN included, drawn even without one), plus a float32 copy per encoding: the stack's
    own in a float32 run, its round-off twin's in a float64 run (noise.py); a 16-bit run's own copy and its float32
    twin's per encoding."""
    m = spec.stack
    numbers = m.n_layers * m.d_model**2 * (4 + 2 * m.ffn_mult)
    copies = 8 + len(spec.encodings) * (4 if m.dtype in ("float32", "float64") else WEIGHT_BYTES[m.dtype] + 4)
    default = {name: ModelSpec.model_fields[name].default for name in ("d_model", "n_layers", "ffn_mult")}
    growth = {
        "d_model": (m.d_model / default["d_model"]) ** 2,
        "n_layers": m.n_layers / default["n_layers"],
        "ffn_mult": (4 + 2 * m.ffn_mult) / (4 + 2 * default["ffn_mult"]),
    }
    name = max(growth, key=lambda key: growth[key])
    return Cost(numbers * copies, "weights", ("model", name), f"{getattr(m, name):,}", f"a smaller {name}")


def _weight_draws(spec: Spec) -> int:
    """How often the seeded weights are drawn: the sweep, the probe, attention.csv (once per encoding)."""
    attention = len(spec.encodings) if ATTENTION_FAMILY in spec.metrics and spec.inputs else 0
    return 1 + (DECODABILITY_FAMILY in spec.metrics) + attention


def _chunk_sequences(spec: Spec, n: int, maps: bool, device: Device, most: int) -> tuple[int, int]:
    """Sequences in one forward pass of n-token sequences, as the run sizes it on `device` (plan/chunks.py; at most
    `most`, the sentence's permutations) and batching.aligned_batch pads it; and the numbers each holds."""
    m = spec.stack
    values = sequence_values(n, m.d_model, m.ffn_mult, m.n_layers, m.n_heads, maps)
    shape = ModelShape(m.d_model, m.n_layers, m.n_heads, m.ffn_mult * m.d_model, vocab=0)
    fitting = orders_per_pass("stack", shape, n, maps, False, itemsize(m.dtype), device.memory, device.kind)
    chunk = min(fitting, max(most, 1))
    padding = ROW_ALIGNMENT // math.gcd(n, ROW_ALIGNMENT)
    return -(-chunk // padding) * padding, values


def _chunk_cost(
    spec: Spec, words: list[str], rules: list[perms.Rule], rows_per_sequence: float, where: FieldPath, device: Device
) -> Cost:
    """A chunk of one sentence's permutations (or one probe sentence), the permutations materialised for it
    and its rows in flight."""
    m, n = spec.stack, len(words)
    maps = ATTENTION_FAMILY in spec.metrics or where[0] == "probes"  # probes always run with maps
    count = sum(perms.count(rule, words) for rule in rules)
    sequences, values = _chunk_sequences(spec, n, maps, device, count)
    chunk = sequences * values * itemsize(m.dtype)
    stored = sum(perms.count(rule, words) for rule in rules if not _lazy(rule, n)) * _permutation_bytes(n)
    total = chunk + stored + sequences * rows_per_sequence * ROW_MEMORY_BYTES
    if stored > chunk:
        return Cost(total, "drawn permutations", (*where, "permutations"), f"{count:,} permutations",
                    "fewer permutations")  # fmt: skip
    if maps and m.n_layers * m.n_heads * n * n > values / 2:
        sentence = (*where, "sentence") if where[0] == "inputs" else where
        return Cost(total, "activations per chunk", sentence, f"{n:,} words",
                    "a shorter sentence (its attention maps grow as its length squared)")  # fmt: skip
    weights = _weights(spec)
    return Cost(total, "activations per chunk", weights.field, weights.subject, weights.expected)


def _chunk_bytes(spec: Spec, words: list[str], rules: list[perms.Rule], device: Device) -> float:
    """Activations of one chunk of a sentence's permutations (what `validate --plan` shows)."""
    n = len(words)
    count = sum(perms.count(rule, words) for rule in rules)
    sequences, values = _chunk_sequences(spec, n, ATTENTION_FAMILY in spec.metrics, device, count)
    return sequences * values * itemsize(spec.model.dtype)


def _lazy(rule: perms.Rule, n: int) -> bool:
    """Rules streamed without building their list (perms.in_label_order)."""
    return rule in ("all", "prefixes") and n <= 10


def _permutation_bytes(n: int) -> int:
    return PERMUTATION_BYTES + PERMUTATION_BYTES_PER_TOKEN * n


def _random_draws(rule: perms.Rule, words: list[str]) -> float:
    """Expected draws to collect a family's K distinct orders (coupon collector over its slot orders); 0 for other
    rules and for a family listed whole."""
    family, n = shuffles.family(rule), len(words)
    if family is None or family.draws is None:
        return 0
    k = perms.count(rule, words)
    choices = shuffles.slot_orders(family, n) - 1 if family.kind != "random" or n <= 20 else math.inf
    if choices > 100 * k:
        return k

    def harmonic(m: float) -> float:
        return math.log(m) + 0.5772 + 1 / (2 * m) if m else 0.0

    return choices * (harmonic(choices) - harmonic(choices - k))


def _stack_rows(spec: Spec, compares: Compares, have: Collection[Needs]) -> dict[Keep, int]:
    """Rows one reordering (or probe) writes through the stack's loop, as the metric registry counts them."""
    m = spec.stack
    return loop_rows(compares, spec.metrics, "stack", STACK_POOLINGS, m.n_layers, m.n_heads, have)


def _sentence_rows(
    spec: Spec, words: list[str], rules: list[perms.Rule], sentence: str, sure: bool = False
) -> tuple[float, float]:
    """metrics.csv rows one encoding writes for a sentence under its rules, and their mean width without
    the encoding and swept columns."""
    rows = _stack_rows(spec, "reorderings", reordering_needs(words))
    n, every, prefix = len(words), rows["every reordering"], rows["last word kept"]
    count = sum(perms.count(rule, words) for rule in rules)
    kept = sum(kept_last(rule, words, sure) for rule in rules)
    moved = len(perms.label(tuple(range(n)))) + len(" ".join(words))  # permutation and permuted columns
    if spec.rows == "per_permutation":
        return count * every + kept * prefix, ROW_FIXED_BYTES + len(sentence) + moved
    keys = (every if count else 0) + (prefix if kept else 0)
    return 2 * keys, ROW_FIXED_BYTES + len("mean,") + len(sentence) + moved / 2  # max rows name a permutation


def _probe_rows(spec: Spec, a: str, b: str) -> tuple[int, float]:
    """Rows one encoding writes for a probe pair (loop.MeasuringLoop.measure_probe), and their mean width."""
    lowercase = spec.embeddings.lowercase
    words_a, words_b = tokenize(a, lowercase), tokenize(b, lowercase)
    have: list[Needs] = ["a reordering"] if occurrence_matching(words_a, words_b) is not None else []
    statistics = 1 if spec.rows == "per_permutation" else 2
    rows = statistics * _stack_rows(spec, "probes", have)["every reordering"]
    return rows, ROW_FIXED_BYTES + len(a) + len(b) + 2 * len(words_a)


def _decodability_memory(spec: Spec) -> Cost:
    """The position probe (probing.measure_decodability): word table, sentences, the stack's states and maps
    for all of them at once, and the least-squares fit per layer in float64."""
    m, probe = spec.stack, spec.decodability
    S, n, d = probe.sentences, probe.length, m.d_model
    states = S * sequence_values(n, d, m.ffn_mult, m.n_layers, m.n_heads, True) * itemsize(m.dtype)
    terms = {
        "vocabulary": 8 * probe.vocabulary * d,
        "length": S * n * n * (m.n_layers * m.n_heads * itemsize(m.dtype) + 3 * 8),
        "sentences": states + 8 * S * n * (1 + 3 * d) + 16 * d * d,
    }
    terms["sentences"] -= S * n * n * m.n_layers * m.n_heads * itemsize(m.dtype)  # counted under length
    name = max(terms, key=lambda key: terms[key])
    default = DecodabilitySpec.model_fields[name].default
    return Cost(sum(terms.values()), "the position probe", ("decodability", name), f"{getattr(probe, name):,}",
                f"a smaller {name} (default {default})")  # fmt: skip


def _decodability_seconds(spec: Spec) -> Cost:
    """The probe's forward passes, word vectors and per-layer least-squares fits (float64)."""
    m, probe = spec.stack, spec.decodability
    d, encodings = m.d_model, len(spec.encodings)
    fits = encodings * (m.n_layers + 1) * (2 * probe.training_sentences * probe.length * d * d + d**3)
    seconds = encodings * probe.sentences * stack_flops(spec, probe.length) / FLOPS_PER_SECOND[m.dtype]
    seconds += fits / FLOPS_PER_SECOND["float64"] + probe.vocabulary * (SECONDS_PER_WORD + d * SECONDS_PER_WEIGHT)
    return Cost(seconds, "the position probe", ("decodability", "sentences"), f"{probe.sentences:,}",
                "fewer sentences")  # fmt: skip
