"""What a run will cost, worked out before it starts, and the limits that refuse what cannot fit this machine.

`load_spec` calls `validate_limits`, so `validate`, `run`, `check` and `compare` refuse, in one line naming
the figure and the field to change, a spec whose run would exhaust memory, run for weeks, write CSVs too
large to read back, or write no rows at all. `orderlab validate --plan` prints `estimate(spec)`: memory,
sequences, time and output size per sweep combination.

The formulas follow the code they describe: measure/loop.py's chunks (`sequence_values` is the one
definition of a sequence's working set), metric_computations.record_metrics' rows, probing.py's probe,
trace.attention_maps and the pretrained backends' passes; tests/test_plan.py holds the row counts
and CSV sizes against real runs. Rates are conservative (a loaded machine's), so runs finish sooner.
Pure and torch-free: must not import torch, numpy or pandas.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from orderlab.core import permutations as perms
from orderlab.core.corpustext import read_corpus
from orderlab.core.text import occurrence_matching, repeated_pairs, tokenize
from orderlab.errors import OrderlabError, SpecError
from orderlab.families import FAMILIES
from orderlab.families.family import ModelShape
from orderlab.metrics import (
    ATTENTION_FAMILY,
    CAUSAL_POOLINGS,
    DECODABILITY_FAMILY,
    ENCODER_POOLINGS,
    PAIR_DISTANCE_FAMILY,
    PREFIX_INVARIANCE_FAMILY,
    REPEATED_WORDS_FAMILY,
    STACK_POOLINGS,
    Compares,
    Keep,
    Model,
    Needs,
    loop_rows,
)
from orderlab.plan.chunks import (
    PRETRAINED_CHUNK,
    ROW_ALIGNMENT,
    orders_per_pass,
    pass_values,
    sequence_values,
    shared_prefix_values,
    tiles,
)
from orderlab.plan.device import Device, available_memory
from orderlab.plan.memory import memory_room
from orderlab.plan.sweep import SweptValue, describe, plan
from orderlab.plan.token_count import subword_counter
from orderlab.spec.extras import packaged_model_folder
from orderlab.spec.families import CorpusInputs, HFModelSpec, PretrainedModelSpec
from orderlab.spec.fields import LOW_PRECISION
from orderlab.spec.schema import DecodabilitySpec, ModelSpec, relative_to_spec, uses_backend

if TYPE_CHECKING:
    from orderlab.spec.schema import Spec
    from orderlab.spec.yamlsource import FieldPath, LocatedDocument

# --- this machine: budgets and measured rates ------------------------------------------------------

# Python, torch and pandas once imported: 262 MB of a run's measured peak RSS (README), rounded up.
BASE_BYTES = 300 * 10**6
# A run may plan on this share of the memory available when it is validated: the rest is for the OS,
# the other processes of a shared machine and the allocator's slack.
MEMORY_SHARE = 0.8
# The stack's matmul FLOP/s, conservative: the runner measured 89-163 GFLOP/s (float32) and 35-70
# (float64) on a quiet 2-core machine (shared/PERFORMANCE.md), 15 for both while other sessions ran.
FLOPS_PER_SECOND = {"float32": 15e9, "float64": 8e9, "bfloat16": 15e9, "float16": 15e9}  # 16-bit: float32's, not more
# A transformers forward's matmuls: measured 310 GFLOP/s at BERT-base shape in batches of 256 sequences of 9 tokens,
# and about 250 for MiniLM in corpus mode (batches of 64), on a quiet 2-core machine (2 threads; about a core's FMA
# peak); taken lower, for busier or older machines. A plan within 2x of the measured time (benchmarks/bench_zoo.py).
PRETRAINED_FLOPS_PER_SECOND = 200e9
# Word pieces per white-space word, rounded up (MiniLM: "dog bites man" is 3 pieces, long words 2-4); a seeded zoo
# model's tokenizer is word-level: one token a word.
TOKENS_PER_WORD = 1.5
# Work per sequence beside the matmuls (gather, metrics, reductions): 47 us measured on a tiny stack.
SECONDS_PER_SEQUENCE = 60e-6
# Collecting, sorting and formatting one tidy CSV row: 9 us measured (524k rows, loaded machine).
SECONDS_PER_ROW = 12e-6
# Training (train/train.py): float32 on one thread, small matmuls with their backward passes; an AdamW step's
# own work (optimizer, data, autograd bookkeeping) on top. Conservative: the d_model 32 first_word spec measured
# ~2.5 GFLOP/s and ~4 ms a step on this loaded 2-core machine.
TRAINING_FLOPS_PER_SECOND = 2e9
SECONDS_PER_STEP = 5e-3
# Drawing one seeded weight (torch.randn, float64): 28 ns measured.
SECONDS_PER_WEIGHT = 40e-9
# Hashing a word into its seeded vector: 16 us measured at d_model 64 (plus drawing its numbers).
SECONDS_PER_WORD = 30e-6
# Drawing one random permutation (numpy), checking it is new and keeping it.
SECONDS_PER_DRAW = 5e-6
# Starting a run: importing torch, pandas and orderlab (1.7 s measured on a quiet 2-core machine).
START_SECONDS = 2.0
# A zoo or packaged model: importing transformers, once a run (2.5 s measured), then per model its weights, drawn
# (seeded: twice, the layer's own initialisation and then the family's; 8 ns a weight measured at BERT-base shape)
# or read from a folder, and copied into the round-off twin (2 ns a weight); its tokenizer and config.
TRANSFORMERS_IMPORT_SECONDS = 2.5
SECONDS_PER_MODEL_WEIGHT = 12e-9
MODEL_BUILD_SECONDS = 0.2
# A materialised permutation of n tokens (tuple, set entry, sort label): 325 B measured at n = 13, 5 kB at n = 300.
PERMUTATION_BYTES, PERMUTATION_BYTES_PER_TOKEN = 200, 16
# A tidy row while its chunk is collected, sorted and formatted (Python lists, then a pandas frame).
ROW_MEMORY_BYTES = 400
# A row of attention.csv, built whole in memory (numeric columns, the concatenated copy, formatting).
ATTENTION_ROW_MEMORY_BYTES = 200
# A metrics.csv row without its text columns (case, layer, head, metric, value, verdict, commas): 62-66 B measured.
ROW_FIXED_BYTES = 66
PROBE_COLUMN_BYTES = len(",16,15,6.250000e-02")  # a probe row's length, slot and chance columns
# A corpus-mode metrics.csv row without its permutation and encoding (sentence id, words, shuffle, metric, value).
CORPUS_ROW_FIXED_BYTES = 45
# An attention.csv row without its encoding and swept columns (layer, head, slots, value, commas), and without
# the digits of its reordering's number.
ATTENTION_ROW_FIXED_BYTES = 21

# --- the limits -------------------------------------------------------------------------------------

# The longest run accepted, at the conservative rates above. A month here is still hours on a GPU;
# past it a count or a size is far more likely a typo than a plan.
MAX_RUN_SECONDS = 30 * 86400
# The largest CSV accepted: `orderlab check` and `orderlab plot` read metrics.csv and attention.csv
# whole, at several times their size in memory, and a 2 GB CSV already needs ~10 GB to check.
MAX_CSV_BYTES = 2 * 10**9


@dataclass(frozen=True)
class Cost:
    """One figure of an estimate and the spec field that drives it, so that a refusal names what to change."""

    amount: float  # bytes or seconds
    what: str  # e.g. "weights"
    field: FieldPath  # e.g. ("model", "d_model")
    subject: str  # how the message starts: the field's value, e.g. "1,000,000,000" or "300 words"
    expected: str  # e.g. "a smaller d_model"


@dataclass(frozen=True)
class Estimate:
    """What one sweep combination (or a pretrained-model spec) costs: memory, sequences, time, output."""

    columns: dict[str, SweptValue]  # the combination's swept fields, e.g. {"n_layers": 2}; {} when nothing is swept
    name: str  # how a plan names it: the combination, "" without a sweep, or the pretrained model
    weights: Cost  # bytes held for the whole run
    working: Cost  # bytes of the largest working set beside the weights (a chunk, the probe, the maps)
    chunk_bytes: float  # one chunk's activations at the longest sentence
    sequences: int  # forward passes, every encoding included
    seconds: list[Cost]  # parts that add up, START_SECONDS aside
    metrics_rows: float  # expected: a random rule's draws decide how many keep the last word (prefix_invariance)
    least_rows: float  # however the draws fall
    metrics_bytes: Cost
    attention_rows: float
    attention_bytes: Cost

    @property
    def peak_bytes(self) -> float:
        return BASE_BYTES + self.weights.amount + self.working.amount

    @property
    def total_seconds(self) -> float:
        return sum(cost.amount for cost in self.seconds)


def estimate(spec: Spec, spec_file: str | Path, device: Device | None = None) -> list[Estimate]:
    """One estimate per sweep combination (a packaged model's spec is one) on `device` (plan/device.py; None: this
    machine's CPU at the conservative rates); the spec is validated."""
    device = device or Device("cpu", "cpu", available_memory())  # no rates: the name is not read
    if uses_backend(spec):
        return [_pretrained(configuration.spec, configuration.columns, Path(spec_file), device, first=index == 0)
                for index, configuration in enumerate(plan(spec))]  # fmt: skip
    return [_stack(configuration.spec, configuration.columns, device) for configuration in plan(spec)]


def run_seconds(estimates: list[Estimate]) -> float:
    """The whole run: start-up once, then every combination."""
    return START_SECONDS + sum(item.total_seconds for item in estimates)


def validate_limits(spec: Spec, doc: LocatedDocument) -> None:
    """Refuse (SpecError, one line) a run that would not fit this machine or its model's positions, or would write
    no rows."""
    if uses_backend(spec):
        for configuration in plan(spec):
            _refuse_long_sentences(configuration.spec, doc, configuration.columns)
    estimates = estimate(spec, doc.origin)
    room = memory_room()
    for item in estimates:
        if item.peak_bytes > MEMORY_SHARE * room.amount:
            part = max(item.weights, item.working, key=lambda cost: cost.amount)
            raise _refusal(doc, part, item.columns, (
                f"needs ~{size(item.peak_bytes)} of memory ({part.what}: {size(part.amount)}); {room.source} "
                f"{size(room.amount)} available, of which a run may use {MEMORY_SHARE:.0%}"
            ))  # fmt: skip
    seconds = run_seconds(estimates)
    if seconds > MAX_RUN_SECONDS:
        columns, part = max(((i.columns, c) for i in estimates for c in i.seconds), key=lambda pair: pair[1].amount)
        raise _refusal(doc, part, columns, (
            f"would run for ~{duration(seconds)} at this machine's rates ({part.what}: {duration(part.amount)}); "
            f"the limit is {duration(MAX_RUN_SECONDS)}"
        ))  # fmt: skip
    for file, costs in (("metrics.csv", [i.metrics_bytes for i in estimates]),
                        ("attention.csv", [i.attention_bytes for i in estimates])):  # fmt: skip
        total = sum(cost.amount for cost in costs)
        if total > MAX_CSV_BYTES:
            raise _refusal(doc, max(costs, key=lambda cost: cost.amount), {}, (
                f"would write ~{size(total)} to {file}, which `orderlab check` and `plot` read whole; the limit "
                f"is {size(MAX_CSV_BYTES)}"
            ))  # fmt: skip
    if not sum(item.least_rows for item in estimates):
        raise doc.error(("metrics",), (
            f"[{', '.join(spec.metrics)}] measure nothing in these inputs and probes, so metrics.csv would have no "
            f"rows ({PAIR_DISTANCE_FAMILY} needs probes, {REPEATED_WORDS_FAMILY} a repeated word, "
            f"{PREFIX_INVARIANCE_FAMILY} permutations that keep the last word in place, e.g. prefixes); "
            "expected a metric that applies"
        ))  # fmt: skip


def memory_beside_run(spec: Spec, spec_file: str | Path) -> float:
    """Bytes a caller may hold beside the run (what orderlab.api.activations keeps): the share of this machine's
    memory a run may use, less the largest peak the run's estimate expects."""
    peak = max(item.peak_bytes for item in estimate(spec, spec_file))
    return MEMORY_SHARE * available_memory() - peak


def _refuse_long_sentences(spec: Spec, doc: LocatedDocument, columns: dict[str, SweptValue]) -> None:
    """Refuse a sentence or probe with more tokens than the model's positions cover (a learned table's rows, a rotary
    model's range), with the specials ([CLS] and [SEP], or a causal LM's BOS): a seeded model's word-level tokenizer
    makes a token a word; a checkpoint's sub-word pieces are counted by its tokenizer.json where it has one (else a
    word is the least it makes, and the run checks the rest)."""
    if isinstance(spec.inputs, CorpusInputs):
        return
    shape = _backend_shape(spec, doc.origin)
    limit, specials = shape.token_positions, 1 if shape.head else 2
    if not limit:
        return
    seeded = isinstance(spec.pretrained, HFModelSpec) and spec.pretrained.seeded  # one token a word
    pieces = None if seeded else subword_counter(_model_folder(spec, doc.origin))
    texts: list[tuple[FieldPath, str]] = [(("inputs", i, "sentence"), given.sentence) for i, given in
                                          enumerate(spec.sentences)]  # fmt: skip
    texts += [(("probes", i, j), text) for i, probe in enumerate(spec.probes) for j, text in enumerate(probe.pair)]
    for where, text in texts:
        words = tokenize(text)
        tokens = (len(words) if pieces is None else pieces(words)) + specials
        if tokens > limit:
            made = f"{len(words):,} words make {'' if seeded or pieces else 'at least '}{tokens:,} tokens"
            unit = "sub-word tokens (fewer or shorter words)" if pieces else "words"
            expected = f"at most {limit - specials:,} {unit}"
            combination = f" (in the sweep combination {describe(columns)})" if columns else ""
            raise doc.error(where, (
                f"{made} with the model's {specials} special token(s); its positions cover {limit:,}; expected "
                f"{expected}{combination}"
            ))  # fmt: skip


def _refusal(doc: LocatedDocument, cost: Cost, columns: dict[str, SweptValue], figure: str) -> SpecError:
    where = f" (in the sweep combination {describe(columns)})" if columns else ""
    return doc.error(cost.field, f"{cost.subject} {figure}; expected {cost.expected}{where}")


# --- the attention stack ------------------------------------------------------------------------------


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


# The widest round-off lines float32 runs measure, with room (docs/metrics.md: 2e-5 at most on the shipped specs): a
# float32 run is priced to escalate only where its resolution is finer than this. 16-bit lines reach 1e-2 and more.
FLOAT32_LINES = 1e-4


def escalation_seconds(spec: Spec, passes: list[Cost]) -> Cost | None:
    """The worst case of escalation (measure/escalation.py): every input and probe measured again, in the twin's finer
    precision (16-bit: float32; float32: float64), at that precision's rate; None where a run does not escalate (a
    float64 run, `escalate: false`, a float32 run whose resolution is above its lines). passes: the costs of the run's
    own forward passes over inputs and probes."""
    dtype = spec.model.dtype
    low = dtype in LOW_PRECISION
    if not spec.escalate or dtype == "float64" or (not low and spec.resolution >= FLOAT32_LINES):
        return None
    finer = "float32" if low else "float64"
    slower = FLOPS_PER_SECOND[dtype] / FLOPS_PER_SECOND[finer]
    seconds = slower * sum(cost.amount for cost in passes)
    return Cost(seconds, f"re-measuring in {finer} (at most)", ("escalate",), f"escalate: true ({dtype})",
                "escalate: false, or a resolution above this run's round-off")  # fmt: skip


def _stack(spec: Spec, columns: dict[str, SweptValue], device: Device) -> Estimate:
    """The estimate of one concrete spec (every model field one value) on `device`."""
    m, encodings = spec.stack, len(spec.encodings)
    weights = _weights(spec)
    drawing = weights.amount / 8 * _weight_draws(spec) * SECONDS_PER_WEIGHT
    tally = _Tally(seconds=[Cost(drawing, "drawing the weights", weights.field, weights.subject, weights.expected)])
    _add_inputs(spec, tally, device)
    _add_probes(spec, tally, device)
    if escalation := escalation_seconds(spec, tally.seconds[1:]):
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
        seconds = _forward_seconds(device, "stack", m.dtype, flops, calls, m.n_layers, FLOPS_PER_SECOND[m.dtype])
        seconds += encodings * (count + 1) * SECONDS_PER_SEQUENCE
        seconds += sum(_random_draws(rule, n) for rule in rules) * SECONDS_PER_DRAW
        tally.seconds.append(Cost(seconds + encodings * rows * SECONDS_PER_ROW, "the permutations' forward passes",
                                  ("inputs", index, "permutations"), f"{count:,} permutations",
                                  "fewer permutations or a smaller model"))  # fmt: skip
        tally.working.append(_chunk_cost(spec, words, rules, rows / max(count, 1), ("inputs", index), device))


def _forward_seconds(
    device: Device, model: Model, dtype: str, flops: float, calls: float, layers: int, rate: float
) -> float:
    """Forward passes at the device's measured rate for `dtype`, else at the conservative built-in `rate`."""
    priced = device.forward_seconds(model, dtype, flops, calls, layers)
    return flops / rate if priced is None else priced


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
    """attention.csv (attention_maps.py): one input as written and its shown reorderings, every encoding, layer
    and head; the reorderings the input's rule does not give take a pass of their own."""
    shown = spec.attention_maps
    where, expected = ("inputs", shown.input, "sentence"), "a shorter sentence, or metrics without attention"
    if ATTENTION_FAMILY not in spec.metrics or not spec.inputs:
        return 0, Cost(0, "attention.csv", where, "the shown sentence", expected)
    m, encodings = spec.stack, len(spec.encodings)
    n = len(tokenize(spec.sentences[shown.input].sentence, spec.embeddings.lowercase))
    maps = 1 + (len(shown.permutations) if shown.permutations is not None else 1)  # as written, then reordered
    rows = maps * encodings * m.n_layers * m.n_heads * n * n
    digits = 2 * len(str(n - 1)) + len(str(m.n_layers)) + len(str(m.n_heads - 1)) + len(str(maps - 1))
    subject = f"{n:,} words"
    tally.working.append(Cost(rows * ATTENTION_ROW_MEMORY_BYTES, "attention maps", where, subject, expected))
    seconds = rows * SECONDS_PER_ROW + maps * encodings * stack_flops(spec, n) / FLOPS_PER_SECOND[m.dtype]
    tally.seconds.append(Cost(seconds, "attention maps", where, subject, expected))
    width = ATTENTION_ROW_FIXED_BYTES + digits + extra_width
    return rows, Cost(rows * width, "attention.csv", where, "the shown sentence", expected)


WEIGHT_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4, "float64": 8}
WIDEN_NUMBERS = 64 * 2**20  # models/precision.WIDEN_NUMBERS: a 16-bit model's twin widens at most this many at once


def _itemsize(dtype: str) -> int:
    """A dtype's element size in bytes: what prices it (memory, and the chunks that fill it)."""
    return {"float64": 8, "float16": 2, "bfloat16": 2}.get(dtype, 4)


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
    fitting = orders_per_pass("stack", shape, n, maps, False, _itemsize(m.dtype), device.memory, device.kind)
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
    chunk = sequences * values * _itemsize(m.dtype)
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
    return sequences * values * _itemsize(spec.model.dtype)


def _lazy(rule: perms.Rule, n: int) -> bool:
    """Rules streamed without building their list (perms.in_label_order)."""
    return rule in ("all", "prefixes") and n <= 10


def _permutation_bytes(n: int) -> int:
    return PERMUTATION_BYTES + PERMUTATION_BYTES_PER_TOKEN * n


def _random_draws(rule: perms.Rule, n: int) -> float:
    """Expected draws to collect K distinct non-identity permutations (coupon collector); 0 for other rules."""
    k = rule["random"] if isinstance(rule, dict) else getattr(rule, "random", 0)
    if not k:
        return 0
    choices = math.factorial(n) - 1 if n <= 20 else math.inf
    if choices > 100 * k:
        return k

    def harmonic(m: float) -> float:
        return math.log(m) + 0.5772 + 1 / (2 * m) if m else 0.0

    return choices * (harmonic(choices) - harmonic(choices - k))


def _kept_last(rule: perms.Rule, words: list[str], sure: bool) -> float:
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
    return 0 if sure else perms.random_count(rule) / n  # random: 1/n of the draws, but a draw may miss them all


def _stack_rows(spec: Spec, compares: Compares, have: Collection[Needs]) -> dict[Keep, int]:
    """Rows one reordering (or probe) writes through the stack's loop, as the metric registry counts them."""
    m = spec.stack
    return loop_rows(compares, spec.metrics, "stack", STACK_POOLINGS, m.n_layers, m.n_heads, have)


def _reordering_needs(words: list[str], causal: bool = False) -> list[Needs]:
    """What the loop has for a sentence's reorderings: attention maps (when the attention family asks for them),
    repeated words if the sentence repeats one, a causal LM's log-probabilities."""
    have: list[Needs] = ["attention maps"]
    if repeated_pairs(words):
        have.append("repeated words")
    if causal:
        have.append("log-probabilities")
    return have


def _sentence_rows(
    spec: Spec, words: list[str], rules: list[perms.Rule], sentence: str, sure: bool = False
) -> tuple[float, float]:
    """metrics.csv rows one encoding writes for a sentence under its rules, and their mean width without
    the encoding and swept columns."""
    rows = _stack_rows(spec, "reorderings", _reordering_needs(words))
    n, every, prefix = len(words), rows["every reordering"], rows["last word kept"]
    count = sum(perms.count(rule, words) for rule in rules)
    kept = sum(_kept_last(rule, words, sure) for rule in rules)
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


def probe_row_bytes(probe: DecodabilitySpec) -> int:
    """A probe row's bytes without the encoding and swept columns: its input names the random sentences, and it
    fills the length, slot and chance columns that runs with probe rows add to every row."""
    return ROW_FIXED_BYTES + len(f"{probe.sentences} random sentences of {probe.length} words") + PROBE_COLUMN_BYTES


def probe_rows_per_layer(length: int) -> int:
    """The position probe's rows per layer and condition: position_accuracy, position_chance, and
    position_slot_accuracy once per slot (probing.measure_decodability)."""
    return 2 + length


def _decodability_memory(spec: Spec) -> Cost:
    """The position probe (probing.measure_decodability): word table, sentences, the stack's states and maps
    for all of them at once, and the least-squares fit per layer in float64."""
    m, probe = spec.stack, spec.decodability
    S, n, d = probe.sentences, probe.length, m.d_model
    states = S * sequence_values(n, d, m.ffn_mult, m.n_layers, m.n_heads, True) * _itemsize(m.dtype)
    terms = {
        "vocabulary": 8 * probe.vocabulary * d,
        "length": S * n * n * (m.n_layers * m.n_heads * _itemsize(m.dtype) + 3 * 8),
        "sentences": states + 8 * S * n * (1 + 3 * d) + 16 * d * d,
    }
    terms["sentences"] -= S * n * n * m.n_layers * m.n_heads * _itemsize(m.dtype)  # counted under length
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


# --- pretrained models --------------------------------------------------------------------------------

SEEDED_VOCABULARY = 4096  # a seeded zoo model's word-level vocabulary: the spec's words, counted generously


def _backend_shape(spec: Spec, spec_file: Path) -> ModelShape:
    """The model's shape: a seeded zoo model's from the spec, a checkpoint's from its config.json, read by its family's
    own key names (Family.read_config, torch- and transformers-free: validate must answer fast).
    A config.json that is not a JSON object of bounded numbers, or is another family's, is refused here."""
    model = spec.pretrained
    family = FAMILIES.get(model.family)
    if isinstance(model, HFModelSpec) and model.given is not None:  # a model object: its config as a config.json
        try:
            return family.config_file.model_validate(model.given.config).shape()
        except ValidationError as error:
            where = ".".join(str(part) for part in error.errors()[0]["loc"])
            raise OrderlabError(f"model: its config's {where}: {error.errors()[0]['msg']}") from None
    folder = _model_folder(spec, spec_file)
    if folder is None:
        assert isinstance(model, HFModelSpec)  # a seeded model of the zoo
        vocab = max(model.vocab_size or 0, SEEDED_VOCABULARY)
        return family.seeded_shape(model.d_model, model.n_heads, model.n_layers, vocab, model.n_kv_heads, model.d_ffn)
    return family.read_config(folder).shape()


def _model_folder(spec: Spec, spec_file: Path) -> Path | None:
    """The folder of the model's files: the packaged model's, a checkpoint's; None for seeded weights or an object."""
    model = spec.pretrained
    if isinstance(model, PretrainedModelSpec):
        return packaged_model_folder(model.name)
    return None if model.given is not None else model.folder(spec_file)


def _sequence_flops(shape: ModelShape, n: float) -> float:
    """Matmul FLOPs of one sequence of n tokens (word pieces and specials): per token and layer twice its matrices'
    entries, scores and weights @ values 4 n x query width; a causal LM's logits 2 d V per token."""
    layers = shape.n_layers * (2 * n * shape.layer_parameters + 4 * n * n * shape.queries)
    return layers + shape.head * 2 * n * shape.d_model * shape.vocab


def _shared_token_states(words: int, count: int, chunk: int, rule: perms.Rule) -> float:
    """Token states a causal LM's shared-prefix pass (models/kv_prefix.py) computes for `count` orders of `words`
    one-token words (the reference's included): per chunk, BOS's row tile, then at each depth its distinct prefixes
    in whole row tiles. Orders come in label order: a list's trie is counted; a chunk of c orders of `all` holds
    about c / s + 1 prefixes of a depth whose subtrees hold s orders each; drawn orders share no more than the
    prefixes there are."""
    if isinstance(rule, list):
        orders = sorted({tuple(order) for order in rule} | {tuple(range(words))})
        return sum(tiles(1) + sum(tiles(len({order[: depth + 1] for order in orders[start : start + chunk]}))
                                   for depth in range(words))
                   for start in range(0, len(orders), chunk))  # fmt: skip
    chunks, c = math.ceil(count / chunk), min(chunk, count)
    states = chunks * tiles(1)
    for depth in range(words):
        there_are = math.perm(words, depth + 1)
        held = min(c, there_are, math.ceil(c / math.factorial(words - depth - 1)) + 1 if rule == "all" else c)
        states += chunks * tiles(held)
    return states


def prefix_walk_pays(spec: Spec, spec_file: str | Path, device: Device) -> bool:
    """Whether a causal model's prefix walk (prefix_trie.py, kv_prefix.py) pays on `device` against dense passes:
    priced at the device's measured rate on the sentence with the most orders, its n + 1 calls of the distinct
    prefixes against one dense batch of the same orders (Device.sharing_pays; on the CPU it always runs). A sweep:
    where it pays for every combination."""
    if device.kind == "cpu" or not spec.sentences:
        return True
    return all(_walk_pays(configuration.spec, Path(spec_file), device) for configuration in plan(spec))


def _walk_pays(spec: Spec, spec_file: Path, device: Device) -> bool:
    """prefix_walk_pays for a concrete spec, off the CPU."""
    dtype, itemsize = spec.model.dtype, _itemsize(spec.model.dtype)
    model: Model = "pretrained" if uses_backend(spec) else "stack"
    if model == "pretrained":
        shape = _backend_shape(spec, spec_file)
    else:
        m = spec.stack
        shape = ModelShape(m.d_model, m.n_layers, m.n_heads, m.ffn_mult * m.d_model, vocab=0)
    item = max(spec.sentences, key=lambda i: perms.count(i.permutations, tokenize(i.sentence)))
    words = len(tokenize(item.sentence))
    tokens = words + (model == "pretrained")  # a causal LM's BOS
    orders = perms.count(item.permutations, tokenize(item.sentence)) + 1
    chunk = orders_per_pass(model, shape, tokens, False, model == "pretrained", itemsize, device.memory, device.kind)
    held = min(orders, chunk)
    per_state = _sequence_flops(shape, tokens) / tokens if model == "pretrained" else stack_flops(spec, words) / words
    shared = _shared_token_states(words, held, chunk, item.permutations)
    return device.sharing_pays(dtype, shape.n_layers, tokens, held * tokens, shared, per_state)


@dataclass(frozen=True)
class _Workload:
    """What a pretrained-model run puts through the model, per position ablation, and what it writes."""

    passes: list[tuple[int, int]]  # (words in the sequence, how many such sequences)
    shared: list[tuple[int, int, perms.Rule]]  # a causal LM's shared-prefix sentences: (words, orders, their rule)
    rows: float  # metrics.csv rows
    row_bytes: float  # without the encoding column
    batch: int  # sequences per forward pass
    held: float  # bytes of rows kept in memory until the end
    field: FieldPath  # what to change when it is too much
    subject: str


def _sentence_workload(spec: Spec, shape: ModelShape, sharing: bool) -> _Workload:
    """Single sentences (models/pretrained.py) through the measuring loop: rows stream out as the stack's do,
    so what stays in memory is a summary's worth (the max rows of each sentence). sharing: whether a causal LM's
    sentences share prefixes."""
    layers, heads, wanted = shape.n_layers, shape.n_heads, spec.metrics
    causal = isinstance(spec.model, HFModelSpec) and FAMILIES.get(spec.model.family).causal
    poolings = CAUSAL_POOLINGS if causal else ENCODER_POOLINGS

    def loop(compares: Compares, *have: Needs) -> dict[Keep, int]:
        """Rows one reordering (or probe) writes, of the poolings the model defines (a causal LM: no [CLS])."""
        return loop_rows(compares, wanted, "pretrained", poolings, layers, heads, have)

    passes: list[tuple[int, int]] = []
    shared: list[tuple[int, int, perms.Rule]] = []
    rows, row_bytes, held = 0.0, 0.0, 0.0
    if DECODABILITY_FAMILY in wanted:  # its random sentences, one pass each, and its rows per layer
        passes.append((spec.decodability.length, spec.decodability.sentences))
        probe_rows = (layers + 1) * probe_rows_per_layer(spec.decodability.length)
        rows, row_bytes = rows + probe_rows, row_bytes + probe_rows * probe_row_bytes(spec.decodability)
    for item in spec.sentences:
        words = tokenize(item.sentence)
        count = perms.count(item.permutations, words)
        if sharing:  # count + 1: the reference, at most one order more in the first chunk
            shared.append((len(words), count + 1, item.permutations))
        else:
            passes.append((len(words), count + 1))
        kept = _kept_last(item.permutations, words, sure=False)
        written_by_each = loop("reorderings", *_reordering_needs(words, causal))
        each, prefix = written_by_each["every reordering"], written_by_each["last word kept"]
        width = ROW_FIXED_BYTES + 2 * len(item.sentence) + 2 * len(words)
        written = count * each + kept * prefix
        if spec.rows == "summary":  # a max and a mean row per layer, head and metric
            written, width = 2 * ((each if count else 0) + (prefix if kept else 0)), width + len("mean,")
        rows, row_bytes, held = rows + written, row_bytes + written * width, held + (each + prefix)
    for a, b in (probe.pair for probe in spec.probes):
        passes += [(len(tokenize(a)), 1), (len(tokenize(b)), 1)]
        matched: list[Needs] = ["a reordering"] if occurrence_matching(tokenize(a), tokenize(b)) is not None else []
        if causal:
            matched.append("log-probabilities")
        pair = loop("probes", *matched)["every reordering"]
        pair *= 2 if spec.rows == "summary" else 1  # the max and the mean, both the one value
        rows, row_bytes, held = rows + pair, row_bytes + pair * (ROW_FIXED_BYTES + len(a) + len(b)), held + pair
    counts = [perms.count(item.permutations, tokenize(item.sentence)) for item in spec.sentences]
    most = max(range(len(counts)), key=counts.__getitem__, default=None)
    where = ("inputs", most, "permutations") if most is not None else ("probes",)
    subject = f"{counts[most]:,} permutations" if most is not None else "the probes"
    return _Workload(passes, shared, rows, row_bytes, PRETRAINED_CHUNK, held * ROW_MEMORY_BYTES, where, subject)


def _corpus_workload(spec: Spec, spec_file: Path) -> _Workload:
    """Corpus mode (measure/corpus.py): each line and its shuffles; two rows (poolings) per shuffle."""
    inputs = spec.inputs
    assert isinstance(inputs, CorpusInputs)
    lines = read_corpus(relative_to_spec(spec_file, inputs.file))
    shuffles = [line.shuffles(inputs.shuffles) for line in lines]
    passes = [(len(line.words), count + 1) for line, count in zip(lines, shuffles, strict=True)]
    rows = 2 * sum(shuffles)
    widths = [CORPUS_ROW_FIXED_BYTES + 2 * len(line.words) for line in lines]  # + the permutation's label
    row_bytes = 2 * sum(count * width for count, width in zip(shuffles, widths, strict=True))
    subject = f"{inputs.shuffles:,} shuffles of {len(lines):,} sentences"
    return _Workload(passes, [], rows, row_bytes, inputs.batch_size, rows * ROW_MEMORY_BYTES, ("inputs", "shuffles"),
                     subject)  # fmt: skip


def _pretrained(
    spec: Spec, columns: dict[str, SweptValue], spec_file: Path, device: Device, first: bool = True
) -> Estimate:
    """A pretrained model's run on `device`: sequences x FLOPs from the model's shape; its rows are held in memory.
    first: the run's first model, which imports transformers."""
    model, shape = spec.pretrained, _backend_shape(spec, spec_file)
    ablations, itemsize = len(model.position_embeddings), _itemsize(model.dtype)
    d, layers = shape.d_model, shape.n_layers
    name = f"model {_model_name(model)}"
    weights = Cost(model_weight_bytes(shape, model.dtype), "model weights", ("model",), name, "a smaller model")
    corpus = isinstance(spec.inputs, CorpusInputs)
    seeded = isinstance(model, HFModelSpec) and model.seeded  # a word-level tokenizer: one token a word
    # A seeded causal LM's sentences share prefixes (a checkpoint's, where its words are one token each: not known
    # before its tokenizer is loaded, so counted dense); maps run dense.
    maps = ATTENTION_FAMILY in spec.metrics
    sharing = shape.head and seeded and not maps and not corpus and prefix_walk_pays(spec, spec_file, device)
    work = _corpus_workload(spec, spec_file) if corpus else _sentence_workload(spec, shape, sharing)
    expected = "fewer permutations or inputs"

    def tokens(words: int) -> float:
        """A sequence's tokens: its words' pieces and the specials ([CLS] and [SEP], or a causal LM's BOS)."""
        return (1.0 if seeded else TOKENS_PER_WORD) * words + (1 if shape.head else 2)

    longest = math.ceil(tokens(max([words for words, _ in work.passes] + [words for words, _, _ in work.shared])))
    values = pass_values(shape, longest, maps)
    dense = work.batch if corpus else orders_per_pass("pretrained", shape, longest, maps, False, itemsize,
                                                      device.memory, device.kind)  # fmt: skip
    batch = dense * values * itemsize if work.passes else 0  # dense passes (none where every order shares a prefix)
    flops = sum(count * _sequence_flops(shape, tokens(words)) for words, count in work.passes)
    calls = sum(math.ceil(count / dense) for _, count in work.passes)
    if work.shared:
        shared = shared_prefix_values(longest, d, layers, shape.vocab, shape.keys)
        chunk = orders_per_pass("pretrained", shape, longest, False, True, itemsize, device.memory, device.kind)
        orders = tiles(max(count for _, count, _ in work.shared))  # a chunk holds no more orders than there are
        batch = max(batch, min(chunk, orders) * shared * itemsize)
        flops += sum(_shared_token_states(words, count, chunk, rule) * _sequence_flops(shape, tokens(words))
                     / tokens(words) for words, count, rule in work.shared)  # fmt: skip
        calls += sum(math.ceil(count / chunk) * (words + 1) for words, count, _ in work.shared)
    rows = ablations * work.rows
    load = MODEL_BUILD_SECONDS + shape.parameters * SECONDS_PER_MODEL_WEIGHT + first * TRANSFORMERS_IMPORT_SECONDS
    passes = _forward_seconds(device, "pretrained", model.dtype, ablations * flops, ablations * calls, layers,
                              PRETRAINED_FLOPS_PER_SECOND)  # fmt: skip
    seconds = [
        Cost(load, "loading the model", ("model",), name, "a smaller model"),
        Cost(passes + rows * SECONDS_PER_ROW, "the forward passes", work.field, work.subject, expected),
    ]
    if escalation := escalation_seconds(spec, seconds[1:]):
        seconds.append(escalation)
    working = Cost(batch + ablations * work.held, "rows held until the end", work.field, work.subject, expected)
    labels = sum(map(len, model.labels)) / ablations  # the encoding column: each row's label
    metrics = Cost(ablations * work.row_bytes + rows * labels, "metrics.csv", work.field, f"{rows:,.0f} rows",
                   expected)  # fmt: skip
    sequences = ablations * (sum(count for _, count in work.passes) + sum(count for _, count, _ in work.shared))
    swept = sum(len(str(value)) + 1 for value in columns.values())
    attention_rows, attention = _pretrained_attention(spec, shape, labels + swept)
    return Estimate(
        columns,
        describe(columns) or name,
        weights,
        working,
        batch,
        sequences,
        seconds,
        rows,
        rows,
        metrics,
        attention_rows,
        attention,
    )


def _model_name(model: PretrainedModelSpec | HFModelSpec) -> str:
    if isinstance(model, PretrainedModelSpec):
        return model.name
    return model.given.model_class.rsplit(".", 1)[-1] if model.given else model.name or model.path or str(model.family)


def model_weight_bytes(shape: ModelShape, dtype: str) -> float:
    """A zoo model's weights at their peak. float32 and float64: loaded in float32 (4 bytes), then held in the run's
    dtype and in its round-off twin's, the other one (4 + 8). A 16-bit model is drawn or loaded straight in its
    dtype, and its twin borrows its weights, widening each to float32 while an op reads it, a vocabulary-wide one a
    piece at a time (models/precision.py)."""
    if dtype in ("float32", "float64"):
        return shape.parameters * 16
    return shape.parameters * WEIGHT_BYTES[dtype] + min(shape.vocab * shape.d_model, WIDEN_NUMBERS) * 4


def _pretrained_attention(spec: Spec, shape: ModelShape, extra_width: float) -> tuple[float, Cost]:
    """attention.csv of a zoo model (measure/attention_maps.py): the shown input as written and reordered, every
    ablation, layer and head, between words (a word's sub-tokens grouped, the specials left out)."""
    shown = spec.attention_maps
    where, expected = ("inputs", shown.input, "sentence"), "a shorter sentence, or metrics without attention"
    if ATTENTION_FAMILY not in spec.metrics or isinstance(spec.inputs, CorpusInputs) or not spec.inputs:
        return 0, Cost(0, "attention.csv", where, "the shown sentence", expected)
    n = len(tokenize(spec.sentences[shown.input].sentence))
    maps = 1 + (len(shown.permutations) if shown.permutations is not None else 1)  # as written, then reordered
    ablations, layers, heads = len(spec.pretrained.position_embeddings), shape.n_layers, shape.n_heads
    rows = maps * ablations * layers * heads * n * n
    digits = 2 * len(str(n - 1)) + len(str(layers)) + len(str(heads - 1)) + len(str(maps - 1))
    return rows, Cost(rows * (ATTENTION_ROW_FIXED_BYTES + digits + extra_width), "attention.csv", where,
                      "the shown sentence", expected)  # fmt: skip


# --- `validate --plan` -----------------------------------------------------------------------------

PLAN_HEADER = ["", "memory/chunk", "peak", "sequences", "time", "metrics.csv rows", "size", "attention.csv rows",
               "size"]  # fmt: skip


def plan_lines(estimates: list[Estimate]) -> list[str]:
    """One aligned line per sweep combination (none without a sweep), then the whole run."""
    lines = [_plan_row(e.name, e.chunk_bytes, e.peak_bytes, e.sequences, e.total_seconds, e.metrics_rows,
                       e.metrics_bytes.amount, e.attention_rows, e.attention_bytes.amount)
             for e in estimates if e.columns]  # fmt: skip
    lines.append(_plan_row(
        "whole run", max(e.chunk_bytes for e in estimates), max(e.peak_bytes for e in estimates),
        sum(e.sequences for e in estimates), run_seconds(estimates), sum(e.metrics_rows for e in estimates),
        sum(e.metrics_bytes.amount for e in estimates), sum(e.attention_rows for e in estimates),
        sum(e.attention_bytes.amount for e in estimates),
    ))  # fmt: skip
    return _aligned([PLAN_HEADER, *lines])


def _plan_row(name: str, chunk: float, peak: float, sequences: int, seconds: float, rows: float, row_bytes: float,
              maps: float, map_bytes: float) -> list[str]:  # fmt: skip
    attention = [f"{maps:,.0f}", size(map_bytes)] if maps else ["-", "-"]  # no attention.csv
    return [name, size(chunk), size(peak), f"{sequences:,}", f"~{duration(seconds)}", f"{rows:,.0f}",
            size(row_bytes), *attention]  # fmt: skip


def _aligned(rows: list[list[str]]) -> list[str]:
    """Columns padded to their widest cell: the first to the left, numbers to the right."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths,
            strict=True))).rstrip() for row in rows]  # fmt: skip


# --- the machine and the words for its figures -------------------------------------------------------


def size(count: float) -> str:
    """8e12 -> '8.0 TB' (decimal units, as disks and `free -h --si` count)."""
    for unit, scale in (("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= scale:
            return f"{count / scale:,.1f} {unit}" if count < 100 * scale else f"{count / scale:,.0f} {unit}"
    return f"{count:,.0f} B"


def duration(seconds: float) -> str:
    """1.3e8 -> '4.1 years'; 90 -> '1.5 min'."""
    for unit, scale in (("years", 365 * 86400), ("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= scale:
            return f"{seconds / scale:,.1f} {unit}"
    return f"{seconds:.1f} s"
