"""The limits that refuse a run this machine cannot hold, before it starts: memory, a month of compute, CSVs too
large to read back, no rows at all, and sentences longer than the model's positions.

`validate`, `run`, `check` and `compare` call `validate_limits` on every spec they load (loading checks the spec's
contract only: spec/load.py), and refuse in one line naming the figure and the field to change. The figures are
estimate.py's, at the conservative rates of rates.py. Pure and torch-free.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from orderlab.core.text import tokenize
from orderlab.errors import SpecError
from orderlab.metrics import PAIR_DISTANCE_FAMILY, PREFIX_INVARIANCE_FAMILY, REPEATED_WORDS_FAMILY
from orderlab.plan.amounts import duration, size
from orderlab.plan.cost import Cost, run_seconds
from orderlab.plan.device import available_memory
from orderlab.plan.estimate import estimate
from orderlab.plan.memory import memory_room
from orderlab.plan.pretrained_cost import backend_shape, model_folder
from orderlab.plan.rates import MEMORY_SHARE
from orderlab.plan.token_count import subword_counts
from orderlab.spec.model_specs import CorpusInputs, HFModelSpec
from orderlab.spec.schema import DatasetInputs, uses_backend
from orderlab.spec.sweep import SweptValue, describe, plan

if TYPE_CHECKING:
    from orderlab.spec.load import LoadedSpec
    from orderlab.spec.schema import Spec
    from orderlab.spec.yamlsource import FieldPath, LocatedDocument


# The longest run accepted, at rates.py's conservative rates. A month here is still hours on a GPU;
# past it a count or a size is far more likely a typo than a plan.
MAX_RUN_SECONDS = 30 * 86400
# The largest CSV accepted: `orderlab check` and `orderlab plot` read metrics.csv and attention.csv
# whole, at several times their size in memory, and a 2 GB CSV already needs ~10 GB to check.
MAX_CSV_BYTES = 2 * 10**9


def validate_limits(loaded: LoadedSpec) -> LoadedSpec:
    """The loaded spec, once its run is known to fit this machine and its model's positions and to write rows;
    else a SpecError (one line) naming the figure and the field to change."""
    _refuse_over_limits(loaded.spec, loaded.document)
    return loaded


def _refuse_over_limits(spec: Spec, doc: LocatedDocument) -> None:
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
    if isinstance(spec.inputs, CorpusInputs | DatasetInputs):  # dataset inputs: the run counts each example's tokens
        return
    shape = backend_shape(spec, doc.origin)
    limit, specials = shape.token_positions, 1 if shape.head else 2
    if not limit:
        return
    seeded = isinstance(spec.pretrained, HFModelSpec) and spec.pretrained.seeded  # one token a word
    texts: list[tuple[FieldPath, str]] = [(("inputs", i, "sentence"), given.sentence) for i, given in
                                          enumerate(spec.sentences)]  # fmt: skip
    texts += [(("probes", i, j), text) for i, probe in enumerate(spec.probes) for j, text in enumerate(probe.pair)]
    sentences = [tokenize(text) for _, text in texts]
    pieces = None if seeded else subword_counts(model_folder(spec, doc.origin), sentences)
    for index, ((where, _), words) in enumerate(zip(texts, sentences, strict=True)):
        tokens = (len(words) if pieces is None else pieces[index]) + specials
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
