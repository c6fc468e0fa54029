"""Dataset inputs as a Measurement: a sequence-classification model's predictions on labelled examples, as written and
under shuffles of their words (one side of a pair, the other, or both), under each position ablation.

metrics.csv holds, per example and order, the predicted label, its logit margin and the gold label's probability
(measure/task_heads.py: a margin within the round-off is a tie), and per example the literature's metrics
(measure/task_summary.py); summary.csv their means over examples with bootstrap intervals, overall, per gold label
and per group. The round-off is the largest change of an original's logits when it runs again in the twin precision.
Never prints.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from orderlab.core import permutations as perms
from orderlab.core.labelled_data import EXPECTED, MAX_DATASET_BYTES, Example, label_id
from orderlab.core.userfiles import file_sha256
from orderlab.errors import OrderlabError
from orderlab.measure.run_options import DEFAULTS, RunOptions
from orderlab.measure.task_heads import Answers, answers
from orderlab.measure.task_summary import per_example, scopes, summary_rows
from orderlab.metrics.task_predictions import GOLD_PROBABILITY, LABEL_MARGIN, PER_EXAMPLE, PREDICTED_LABEL
from orderlab.models.hf.classifier import ClassifierBackend
from orderlab.models.hf.head_fit import HeadToFit
from orderlab.models.hf.loader import Seeded, model_folder
from orderlab.models.precision import require_dtype, use_matmul_precision
from orderlab.models.pretrained import given_source
from orderlab.spec.dataset_examples import examples_of, training_examples
from orderlab.spec.fields import twin_dtype
from orderlab.spec.model_specs import HFModelSpec, PretrainedModelSpec
from orderlab.spec.schema import DatasetInputs, Spec
from orderlab.vocabulary.digest import Digest, Frames
from orderlab.vocabulary.verdict_words import NON_FINITE, TIE

COLUMNS = ["example", "input", "pair", "label", "group", "encoding", "permutation", "pair_permutation", "permuted",
           "permuted_pair", "metric", "value", "predicted", "verdict"]  # fmt: skip
SEED_SPAN = 2**32  # a drawn order's seed: the inputs' seed plus the example's index, within numpy's seed range


@dataclass(frozen=True)
class Orders:
    """One example's orders: the original first, then its shuffles; per order the slots of each side (None: a side
    left as written, or no pair)."""

    text: list[perms.Permutation]
    pair: list[perms.Permutation | None]

    def sequences(self, example: Example) -> tuple[list[list[str]], list[list[str]] | None]:
        texts = [perms.apply(p, example.text) for p in self.text]
        if example.pair is None:
            return texts, None
        return texts, [example.pair if p is None else perms.apply(p, example.pair) for p in self.pair]


def example_orders(example: Example, index: int, inputs: DatasetInputs) -> Orders:
    """The original and the shuffles the rule gives the permuted side(s); with both sides shuffled, the i-th order
    pairs each side's i-th shuffle (as many orders as the side with fewer has). One line if the rule cannot hold."""
    seed = (inputs.seed + index) % SEED_SPAN

    def shuffles(words: Sequence[str], offset: int) -> list[perms.Permutation]:
        try:
            perms.validate_rule(inputs.permutations, words)
        except ValueError as error:
            raise OrderlabError(f"{example.where}: {' '.join(words)!r}: {error}") from None
        identity = tuple(range(len(words)))
        return [p for p in perms.generate(inputs.permutations, words, (seed + offset) % SEED_SPAN) if p != identity]

    identity_text = tuple(range(len(example.text)))
    if example.pair is None or inputs.permute == "text":
        text = shuffles(example.text, 0)
        return Orders([identity_text, *text], [None] * (len(text) + 1))
    identity_pair = tuple(range(len(example.pair)))
    pair = shuffles(example.pair, 1)
    if inputs.permute == "pair":
        return Orders([identity_text] * (len(pair) + 1), [identity_pair, *pair])
    text = shuffles(example.text, 0)
    count = min(len(text), len(pair))
    return Orders([identity_text, *text[:count]], [identity_pair, *pair[:count]])


class TaskMeasurement:
    """A dataset-inputs spec: its classifier built or loaded and every example measured when `frames()` runs."""

    def __init__(self, spec: Spec, spec_path: Path, options: RunOptions = DEFAULTS):
        assert isinstance(spec.inputs, DatasetInputs)  # and a classifier's model: relations.py
        self.spec, self.spec_path, self.options, self.inputs = spec, spec_path, options, spec.inputs
        self.token_logprobs: list[pd.DataFrame] = []  # dataset inputs write none
        self.summary = pd.DataFrame()
        self.id2label: list[str] = []
        self.dataset_sha256: str | None = None  # the dataset file's, for manifest.json
        self.train_head_sha256: str | None = None  # the file a packaged encoder's head is fitted on, for manifest.json

    def frames(self) -> Frames:
        spec, device, notes = self.spec, self.options.device, self.options.notes
        model = spec.model
        assert isinstance(model, HFModelSpec | PretrainedModelSpec)
        examples = examples_of(self.inputs, self.spec_path)
        if self.inputs.dataset is not None:
            path = self.spec_path.parent / self.inputs.dataset
            self.dataset_sha256 = file_sha256(path, MAX_DATASET_BYTES, EXPECTED)
        if isinstance(model, PretrainedModelSpec) and model.train_head is not None:
            path = self.spec_path.parent / model.train_head.dataset
            self.train_head_sha256 = file_sha256(path, MAX_DATASET_BYTES, EXPECTED)
        if notes:
            notes("loading the classifier")
        require_dtype(model.dtype, device)
        use_matmul_precision(model.matmul_precision, device)
        backend = classifier(spec, self.spec_path, examples, self.options)
        self.id2label = backend.id2label
        gold = [label_id(example, self.id2label) for example in examples]
        orders = [example_orders(example, index, self.inputs) for index, example in enumerate(examples)]
        twin = backend.twin(twin_dtype(model.dtype))
        progress = self.options.progress or (lambda done, total: None)
        frames, summaries = [], []
        sequences = sum(len(o.text) for o in orders)
        total = len(model.position_embeddings) * sequences
        for done, ablation in enumerate(model.position_embeddings):
            label = model.label(ablation)
            backend.set_positions(ablation, spec.seed)
            twin.set_positions(ablation, spec.seed)

            def advance(count: int, before: int = done * sequences) -> None:
                progress(before + count, total)

            logits = run_orders(backend, examples, orders, self.inputs.batch_size, advance)
            originals = run_orders(twin, examples, [Orders(o.text[:1], o.pair[:1]) for o in orders],
                                   self.inputs.batch_size, lambda _count: None)  # fmt: skip
            values, tied, rows = [], [], []
            for index, example in enumerate(examples):
                round_off = float(np.abs(logits[index][0] - originals[index][0]).max())
                found = answers(logits[index], gold[index], round_off, model.dtype)
                rows += order_rows(example, index, orders[index], found, label, self.id2label)
                values.append(per_example(found, gold[index]))
                tied.append(int(found.tied.sum()))
            frames.append(typed(rows))
            table = pd.DataFrame(values, columns=list(PER_EXAMPLE))
            frames.append(example_rows(examples, table, label))
            scoped = scopes([None if g is None else self.id2label[g] for g in gold], [e.group for e in examples])
            summaries.append(summary_rows(label, table, scoped, np.array(tied), self.inputs.resamples,
                                          self.inputs.seed))  # fmt: skip
        metrics = pd.concat(frames, ignore_index=True)[COLUMNS]
        order = {name: i for i, name in enumerate([*model.labels])}
        metrics = metrics.assign(_encoding=metrics["encoding"].map(order)).sort_values(
            ["example", "_encoding"], kind="mergesort", ignore_index=True).drop(columns="_encoding")  # fmt: skip
        self.summary = pd.concat(summaries, ignore_index=True)
        yield metrics
        return Digest(non_finite=int((~np.isfinite(metrics["value"].to_numpy(dtype=np.float64))).sum()))

    def tables(self, digest: Digest) -> dict[str, pd.DataFrame]:
        """summary.csv: the published metrics' means over examples with their bootstrap intervals."""
        return {"summary": self.summary}

    def write_beside(self, folder: Path) -> list[str]:
        return []


def classifier(spec: Spec, spec_path: Path, examples: list[Example], options: RunOptions) -> ClassifierBackend:
    """The spec's classifier: a packaged encoder with the head orderlab fits on the train_head file, a folder's or
    cached model's, the model object given from Python, or a seeded model with a seeded head whose word-level
    tokenizer knows the examples' words."""
    model = spec.model
    if isinstance(model, PretrainedModelSpec):
        assert model.train_head is not None and isinstance(spec.inputs, DatasetInputs)  # relations.py
        folder = model_folder(model, spec_path)
        assert folder is not None
        fitted = training_examples(model, spec.inputs, spec_path)
        pairs = [e.pair or [] for e, _ in fitted] if any(e.pair is not None for e, _ in fitted) else None
        head = HeadToFit(folder, tuple(model.train_head.labels), [e.text for e, _ in fitted], pairs,
                         [gold for _, gold in fitted], model.train_head.epochs, model.train_head.lr,
                         spec.inputs.batch_size)  # fmt: skip
        return ClassifierBackend(head, model.family, model.dtype, options.device)
    assert isinstance(model, HFModelSpec) and isinstance(model.family, str)
    folder = model.folder(spec_path)
    if folder is not None:
        return ClassifierBackend(folder, model.family, model.dtype, options.device)
    given = given_source(model, options.model)
    if given is not None:
        return ClassifierBackend(given, model.family, model.dtype, options.device)
    words = sorted({w for e in examples for w in [*e.text, *(e.pair or [])]})
    source = Seeded(model.d_model, model.n_heads, model.n_layers, tuple(words), spec.seed)
    return ClassifierBackend(source, model.family, model.dtype, options.device, model.id2label)


def run_orders(
    backend: ClassifierBackend, examples: list[Example], orders: list[Orders], batch: int,
    advance: Callable[[int], None],
) -> list[np.ndarray]:  # fmt: skip
    """Each example's logits (orders, labels), its orders run in batches of `batch` sequences across examples, taken in
    order of their token counts so that a batch pads little (in the order given, each batch pads to its longest: at 8
    to 12 words, a sixth more rows through every matmul than the tokens need)."""
    texts: list[list[str]] = []
    pairs: list[list[str]] = []
    counts: list[int] = []
    for example, order in zip(examples, orders, strict=True):
        text, pair = order.sequences(example)
        texts += text
        pairs += pair or [[] for _ in text]
        counts.append(len(text))
    with_pairs = any(example.pair is not None for example in examples)
    encoded = backend.encoded(texts, pairs if with_pairs else None)  # tokenized once: counted, then run
    taken = np.argsort([len(ids) for ids in encoded["input_ids"]], kind="stable")
    logits = np.zeros((len(texts), len(backend.id2label)))
    for start in range(0, len(texts), batch):
        chunk = taken[start : start + batch]
        run = backend.run({key: [column[i] for i in chunk] for key, column in encoded.items()})
        logits[chunk] = run.cpu().numpy()
        advance(min(start + batch, len(texts)))
    return np.split(logits, np.cumsum(counts)[:-1]) if counts else []  # each example's orders, in their order


def order_rows(
    example: Example, index: int, orders: Orders, found: Answers, encoding: str, id2label: list[str]
) -> list[list[Any]]:
    """metrics.csv's rows (COLUMNS) of one example's orders: per order its predicted label, margin and gold
    probability, in that order. Plain lists: a table of its own per example cost more than the rows' work."""
    texts, pairs = orders.sequences(example)
    identity = list(identity_columns(example, index, encoding).values())
    predicted = np.where(found.finite, found.predicted, np.nan)  # non-finite logits predict nothing
    metrics = [(PREDICTED_LABEL, predicted), (LABEL_MARGIN, found.margin)]
    if example.label is not None:  # an unlabelled example has no gold label
        metrics.append((GOLD_PROBABILITY, found.gold_probability))
    columns = [(metric, values.astype(np.float64).tolist()) for metric, values in metrics]  # Python floats, once
    verdicts = np.where(found.finite, np.where(found.tied, TIE, ""), NON_FINITE).tolist()
    finite = found.finite.tolist()
    labels = [id2label[label] if finite[order] else "" for order, label in enumerate(found.predicted.tolist())]
    rows = []
    for order, (text, words) in enumerate(zip(orders.text, texts, strict=True)):
        pair = orders.pair[order]
        described = [perms.label(text), "" if pair is None else perms.label(pair), " ".join(words),
                     "" if pairs is None else " ".join(pairs[order])]  # fmt: skip
        rows += [[*identity, *described, metric, values[order], labels[order], verdicts[order]]
                 for metric, values in columns]  # fmt: skip
    return rows


def example_rows(examples: list[Example], values: pd.DataFrame, encoding: str) -> pd.DataFrame:
    """metrics.csv's per-example rows of the published metrics (no order: their permutation columns are empty); a
    metric that does not apply to an example (NaN: task_summary.per_example) writes no row."""
    rows = []
    for index, example in enumerate(examples):
        identity = list(identity_columns(example, index, encoding).values())
        row = values.iloc[index]
        rows += [[*identity, "", "", "", "", metric, float(row[metric]), "", ""] for metric in PER_EXAMPLE
                 if not np.isnan(row[metric])]  # fmt: skip
    return typed(rows)


def typed(rows: list[list[Any]]) -> pd.DataFrame:
    """Rows (COLUMNS) as a table whose numbers keep their dtypes, none of its rows or all."""
    return pd.DataFrame(rows, columns=COLUMNS).astype({"example": "int64", "value": "float64"})


def identity_columns(example: Example, index: int, encoding: str) -> dict[str, Any]:
    """The columns naming an example and the condition its rows ran under."""
    return {"example": index, "input": " ".join(example.text), "pair": " ".join(example.pair or []),
            "label": "" if example.label is None else str(example.label), "group": example.group or "",
            "encoding": encoding}  # fmt: skip
