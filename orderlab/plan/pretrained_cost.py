"""A pretrained model's cost (a zoo model, seeded or from a folder, or a packaged one): its shape read from its
config, torch- and transformers-free, then its sentences' (or its corpus's) passes through the measuring loop, the
rows they write and what the run holds.

The formulas follow the backends' passes (models/pretrained.py, models/kv_prefix.py's shared prefixes, measure/
corpus.py); tests/pretrained/test_one_loop.py holds the row counts against a real run. Pure and torch-free.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from orderlab.core import permutations as perms
from orderlab.core.corpustext import read_corpus
from orderlab.core.text import occurrence_matching, tokenize
from orderlab.errors import OrderlabError
from orderlab.families import FAMILIES
from orderlab.families.family import ModelShape
from orderlab.metrics import (
    ATTENTION_FAMILY,
    CAUSAL_POOLINGS,
    DECODABILITY_FAMILY,
    ENCODER_POOLINGS,
    Compares,
    Keep,
    Needs,
    loop_rows,
    reads_logprobs,
    reads_states,
)
from orderlab.plan.chunks import PRETRAINED_CHUNK, orders_per_pass, pass_values, shared_prefix_values, tiles
from orderlab.plan.cost import ESCALATE, FINER_BUILD, Cost, Estimate, forward_seconds
from orderlab.plan.device import Device
from orderlab.plan.escalation_cost import at_built_in_rates, escalation_seconds
from orderlab.plan.rates import (
    CORPUS_ROW_FIXED_BYTES,
    MODEL_BUILD_SECONDS,
    PRETRAINED_FLOPS_PER_SECOND,
    ROW_FIXED_BYTES,
    ROW_MEMORY_BYTES,
    SECONDS_PER_MODEL_WEIGHT,
    SECONDS_PER_ROW,
    TASK_ROW_BYTES_PER_WORD,
    TASK_ROW_FIXED_BYTES,
    TOKENS_PER_WORD,
    TRANSFORMERS_IMPORT_SECONDS,
    WEIGHT_BYTES,
    WIDEN_NUMBERS,
    itemsize,
)
from orderlab.plan.written import attention_csv, kept_last, probe_row_bytes, probe_rows_per_layer, reordering_needs
from orderlab.spec.dataset_examples import examples_of, training_examples
from orderlab.spec.extras import packaged_model_folder
from orderlab.spec.model_specs import CorpusInputs, HFModelSpec, PretrainedModelSpec
from orderlab.spec.schema import DatasetInputs, Spec, relative_to_spec
from orderlab.spec.sweep import SweptValue, describe

if TYPE_CHECKING:
    from orderlab.spec.yamlsource import FieldPath


SEEDED_VOCABULARY = 4096  # a seeded zoo model's word-level vocabulary: the spec's words, counted generously
LOADING = "loading the model"  # the cost paid once a run, whatever it measures (patching_cost prices the rest)


def backend_shape(spec: Spec, spec_file: Path) -> ModelShape:
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
    folder = model_folder(spec, spec_file)
    if folder is None:
        assert isinstance(model, HFModelSpec)  # a seeded model of the zoo
        vocab = max(model.vocab_size or 0, SEEDED_VOCABULARY)
        return family.seeded_shape(model.d_model, model.n_heads, model.n_layers, vocab, model.n_kv_heads, model.d_ffn)
    return family.read_config(folder).shape()


def model_folder(spec: Spec, spec_file: Path) -> Path | None:
    """The folder of the model's files: the packaged model's, a checkpoint's; None for seeded weights or an object."""
    model = spec.pretrained
    if isinstance(model, PretrainedModelSpec):
        return packaged_model_folder(model.name)
    return None if model.given is not None else model.folder(spec_file)


def head_flops(shape: ModelShape) -> float:
    """A causal LM's logits of one token: 2 d V (none for an encoder)."""
    return shape.head * 2 * shape.d_model * shape.vocab


def sequence_flops(shape: ModelShape, n: float) -> float:
    """Matmul FLOPs of one sequence of n tokens (word pieces and specials): per token and layer twice its matrices'
    entries, scores and weights @ values 4 n x query width; a causal LM's logits 2 d V per token."""
    layers = shape.n_layers * (2 * n * shape.layer_parameters + 4 * n * n * shape.queries)
    return layers + n * head_flops(shape)


def headless_states(spec: Spec, words: int, count: int, chunk: int, rule: perms.Rule) -> float:
    """Token states of the walk's deepest depth, where it runs: the full orders, whose logits nothing reads, so their
    call skips the LM head (models/kv_prefix.py, next_tokens)."""
    if walked_depths(spec, words) < words:
        return 0.0
    return shared_token_states(words, count, chunk, rule) - shared_token_states(words, count, chunk, rule, words - 1)


def shared_token_states(words: int, count: int, chunk: int, rule: perms.Rule, depths: int | None = None) -> float:
    """Token states a causal LM's shared-prefix pass (models/kv_prefix.py) computes for `count` orders of `words`
    one-token words (the reference's included): per chunk, BOS's row tile, then at each of its `depths` (default:
    one a word; walked_depths) its distinct prefixes in whole row tiles. Orders come in label order: a list's trie is
    counted; a chunk of c orders of `all` holds about c / s + 1 prefixes of a depth whose subtrees hold s orders each;
    drawn orders share no more than the prefixes there are."""
    if isinstance(rule, list):
        orders = sorted({tuple(order) for order in rule} | {tuple(range(words))})
        return sum(tiles(1) + sum(tiles(len({order[: depth + 1] for order in orders[start : start + chunk]}))
                                   for depth in range(words if depths is None else depths))
                   for start in range(0, len(orders), chunk))  # fmt: skip
    chunks, c = math.ceil(count / chunk), min(chunk, count)
    states = chunks * tiles(1)
    for depth in range(words if depths is None else depths):
        there_are = math.perm(words, depth + 1)
        held = min(c, there_are, math.ceil(c / math.factorial(words - depth - 1)) + 1 if rule == "all" else c)
        states += chunks * tiles(held)
    return states


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
    fit: tuple[tuple[int, int], ...] = ()  # passes run once, not per ablation: a head's fit (as `passes`)


def walked_depths(spec: Spec, words: int) -> int:
    """Depths a causal LM's shared walk runs for a sentence of `words` one-token words: one a word, but for a run
    whose metrics read log-probabilities alone (metrics.reads_states), which never runs the last word's own pass."""
    return words if reads_states(spec.metrics, "pretrained", CAUSAL_POOLINGS) else words - 1


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
        kept = kept_last(item.permutations, words, sure=False)
        written_by_each = loop("reorderings", *reordering_needs(words, causal))
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


def _dataset_workload(spec: Spec, spec_file: Path) -> _Workload:
    """Dataset inputs (measure/task_measure.py): each example as written and its shuffles, then the original again
    in the twin precision. Rows: per order the prediction and margin, and a labelled example's gold probability; per
    example at most the published metrics that can apply to it (an unlabelled one: flip_rate; a labelled one: all but
    one of p_c and p_f, correct_surviving only where the original is right, which the estimate counts as if it were:
    at most one row over per example). A head orderlab fits (models/hf/head_fit.py) first runs each of its training
    examples once, under the trained positions; the descent after it is hundredths of a second, not priced."""
    inputs = spec.inputs
    assert isinstance(inputs, DatasetInputs)
    examples = examples_of(inputs, spec_file)
    passes: list[tuple[int, int]] = []
    rows, row_bytes = 0, 0.0
    for example in examples:
        shuffled = [example.text] if example.pair is None or inputs.permute == "text" else (
            [example.pair] if inputs.permute == "pair" else [example.text, example.pair])  # fmt: skip
        orders = 1 + min(perms.count(inputs.permutations, words) for words in shuffled)
        words = len(example.text) + len(example.pair or [])
        passes += [(words, orders), (words, 1)]
        written = (2 + (example.label is not None)) * orders + (5 if example.label is not None else 1)
        rows += written
        row_bytes += written * (TASK_ROW_FIXED_BYTES + TASK_ROW_BYTES_PER_WORD * words)
    subject = f"{len(examples):,} examples and their shuffles"
    model = spec.model
    fitted = training_examples(model, inputs, spec_file) if isinstance(model, PretrainedModelSpec) and \
        model.train_head is not None else []  # fmt: skip
    fit = tuple((len(example.text) + len(example.pair or []), 1) for example, _ in fitted)
    return _Workload(passes, [], rows, row_bytes, inputs.batch_size, rows * ROW_MEMORY_BYTES,
                     ("inputs", "permutations"), subject, fit)  # fmt: skip


def pretrained_estimate(
    spec: Spec, columns: dict[str, SweptValue], spec_file: Path, device: Device, walk: bool, first: bool = True
) -> Estimate:
    """A pretrained model's run on `device`: sequences x FLOPs from the model's shape; its rows are held in memory.
    walk: whether the run walks shared prefixes where it can (prefix_walk.prefix_walk_pays, decided once a run);
    first: the run's first model, which imports transformers."""
    model, shape = spec.pretrained, backend_shape(spec, spec_file)
    ablations, item_bytes = len(model.position_embeddings), itemsize(model.dtype)
    d, layers = shape.d_model, shape.n_layers
    name = f"model {_model_name(model)}"
    copied = isinstance(spec.inputs, DatasetInputs)  # a classifier's twin is a copy (models/hf/classifier.py)
    weights = Cost(model_weight_bytes(shape, model.dtype, copied), "model weights", ("model",), name, "a smaller model")
    corpus = isinstance(spec.inputs, CorpusInputs | DatasetInputs)  # batched as the spec says, not by the plan
    seeded = isinstance(model, HFModelSpec) and model.seeded  # a word-level tokenizer: one token a word
    # A seeded causal LM's sentences share prefixes (a checkpoint's, where its words are one token each: not known
    # before its tokenizer is loaded, so counted dense); maps run dense.
    maps = ATTENTION_FAMILY in spec.metrics
    sharing = shape.head and seeded and not maps and not corpus and walk
    if isinstance(spec.inputs, DatasetInputs):
        work = _dataset_workload(spec, spec_file)
    else:
        work = _corpus_workload(spec, spec_file) if corpus else _sentence_workload(spec, shape, sharing)
    expected = "fewer permutations or inputs"

    def tokens(words: int) -> float:
        """A sequence's tokens: its words' pieces and the specials ([CLS] and [SEP], or a causal LM's BOS)."""
        return (1.0 if seeded else TOKENS_PER_WORD) * words + (1 if shape.head else 2)

    longest = math.ceil(tokens(max([words for words, _ in [*work.passes, *work.fit]] +
                                   [words for words, _, _ in work.shared])))  # fmt: skip
    values = pass_values(shape, longest, maps)
    dense = work.batch if corpus else orders_per_pass("pretrained", shape, longest, maps, False, item_bytes,
                                                      device.memory, device.kind)  # fmt: skip
    batch = dense * values * item_bytes if work.passes else 0  # dense passes (none where every order shares a prefix)
    # a run whose metrics read no log-probability runs no LM head (models/pretrained.py, Shared.logprobs)
    priced = shape if reads_logprobs(spec.metrics, "pretrained", CAUSAL_POOLINGS) else replace(shape, head=False)
    flops = sum(count * sequence_flops(priced, tokens(words)) for words, count in work.passes)
    calls = sum(math.ceil(count / dense) for _, count in work.passes)

    def walked(item: int) -> tuple[float, int, int]:
        """The prefix walk's FLOPs and calls over every shared sentence's orders, in chunks sized for a dtype of
        `item` bytes (the run's, or the finer one escalation walks in), and that chunk."""
        chunk = orders_per_pass("pretrained", shape, longest, False, True, item, device.memory, device.kind)
        flops = sum(shared_token_states(words, count, chunk, rule, walked_depths(spec, words))
                    * sequence_flops(priced, tokens(words)) / tokens(words)
                    - headless_states(spec, words, count, chunk, rule) * head_flops(priced)
                    for words, count, rule in work.shared)  # fmt: skip
        calls = sum(math.ceil(count / chunk) * (walked_depths(spec, words) + 1) for words, count, _ in work.shared)
        return flops, calls, chunk

    walk_flops, walk_calls = 0.0, 0
    if work.shared:
        shared = shared_prefix_values(longest, d, layers, shape.vocab, shape.keys)
        walk_flops, walk_calls, chunk = walked(item_bytes)
        orders = tiles(max(count for _, count, _ in work.shared))  # a chunk holds no more orders than there are
        batch = max(batch, min(chunk, orders) * shared * item_bytes)
    rows = ablations * work.rows
    load = MODEL_BUILD_SECONDS + shape.parameters * SECONDS_PER_MODEL_WEIGHT + first * TRANSFORMERS_IMPORT_SECONDS
    passes = sum(forward_seconds(device, "pretrained", model.dtype, ablations * f, ablations * c, layers,
                                 PRETRAINED_FLOPS_PER_SECOND, walk)
                 for f, c, walk in ((flops, calls, False), (walk_flops, walk_calls, True)) if c)  # fmt: skip
    seconds = [
        Cost(load, LOADING, ("model",), name, "a smaller model"),
        Cost(passes + rows * SECONDS_PER_ROW, "the forward passes", work.field, work.subject, expected),
    ]
    twin_flops, twin_calls = ablations * flops, ablations * calls  # dense passes: again, dense

    def twin_seconds(finer: str) -> float:
        """Every order measured again in `finer` as the run measures it (models/pretrained.Shared.finer): dense
        passes dense, shared prefixes walked in chunks sized for `finer`, at the device's rate there; without one, as
        the run's dtype prices them, scaled by the built-in rates of the two dtypes."""
        walk = walked(itemsize(finer))[:2] if work.shared else (0.0, 0)
        parts = ((twin_flops, twin_calls, False), (ablations * walk[0], ablations * walk[1], True))
        measured = [device.forward_seconds("pretrained", finer, f, c, layers, w) for f, c, w in parts if c]
        if all(seconds is not None for seconds in measured):
            return sum(seconds for seconds in measured if seconds is not None)
        in_run_dtype = sum(forward_seconds(device, "pretrained", model.dtype, f, c, layers,
                                           PRETRAINED_FLOPS_PER_SECOND, w) for f, c, w in parts if c)  # fmt: skip
        return at_built_in_rates(model.dtype, in_run_dtype)(finer)

    if escalation := escalation_seconds(spec, twin_seconds):
        # and, once, the finer model (models/pretrained.Shared.finer) and its twin, built as the model was
        finer = Cost(shape.parameters * SECONDS_PER_MODEL_WEIGHT, FINER_BUILD, ESCALATE, escalation.subject,
                     escalation.expected)  # fmt: skip
        seconds += [escalation, finer]
    if work.fit:
        fit_flops = sum(count * sequence_flops(shape, tokens(words)) for words, count in work.fit)
        fit = forward_seconds(device, "pretrained", model.dtype, fit_flops, math.ceil(len(work.fit) / dense), layers,
                              PRETRAINED_FLOPS_PER_SECOND)  # fmt: skip
        seconds.append(Cost(fit, "fitting the head", ("model", "train_head", "dataset"),
                            f"{len(work.fit):,} examples to fit the head on", "fewer examples"))  # fmt: skip
    working = Cost(batch + ablations * work.held, "rows held until the end", work.field, work.subject, expected)
    labels = sum(map(len, model.labels)) / ablations  # the encoding column: each row's label
    metrics = Cost(ablations * work.row_bytes + rows * labels, "metrics.csv", work.field, f"{rows:,.0f} rows",
                   expected)  # fmt: skip
    sequences = ablations * (sum(count for _, count in work.passes) + sum(count for _, count, _ in work.shared))
    swept = sum(len(str(value)) + 1 for value in columns.values())
    shown = attention_csv(spec, ablations, layers, shape.n_heads, labels + swept)
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
        shown.rows,
        shown.bytes,
    )


def _model_name(model: PretrainedModelSpec | HFModelSpec) -> str:
    if isinstance(model, PretrainedModelSpec):
        return model.name
    return model.given.model_class.rsplit(".", 1)[-1] if model.given else model.name or model.path or str(model.family)


def model_weight_bytes(shape: ModelShape, dtype: str, twin_copied: bool = False) -> float:
    """A zoo model's weights at their peak. float32 and float64: loaded in float32 (4 bytes), then held in the run's
    dtype and in its round-off twin's, the other one (4 + 8): the twin borrows the weights for its first pass and
    holds a copy from its second (models/hf/loader.PretrainedBackend.reading), priced here. A 16-bit model is drawn
    or loaded straight in its dtype, and its twin borrows its weights, widening each to float32 while an op reads
    it, a vocabulary-wide one a piece at a time (models/precision.py); twin_copied: a classifier's twin, a float32
    copy of the whole model."""
    if dtype in ("float32", "float64"):
        return shape.parameters * 16
    twin = shape.parameters * 4 if twin_copied else min(shape.vocab * shape.d_model, WIDEN_NUMBERS) * 4
    return shape.parameters * WEIGHT_BYTES[dtype] + twin
