"""What a trained spec adds to metrics.csv: the `weights` column (trained beside untrained) and task accuracy rows.

Task accuracy rows are tidy rows (rows.COLUMNS) of case `task`, one per trained encoding and test length, at the
last layer; their verdict says whether the length was trained on, so that length generalisation reads off a column.
"""

from __future__ import annotations

import pandas as pd

from orderlab.measure.rows import COLUMNS
from orderlab.spec.metric_names import TASK_ACCURACY
from orderlab.spec.schema import Spec
from orderlab.train.train import TrainedStack, task_accuracy

WEIGHTS = "weights"  # the column: which stacks a row measures
TRAINED, UNTRAINED = "trained", "untrained"
TASK_CASE = "task"
TRAINED_LENGTH, UNTRAINED_LENGTH = "trained length", "untrained length"


def training_work(spec: Spec) -> int:
    """Progress units of training one combination: every encoding's steps, each its batch of sentences."""
    assert spec.train is not None
    return len(spec.encodings) * spec.train.steps * spec.train.batch


def task_subject(spec: Spec, n: int) -> str:
    """The `input` of a task accuracy row: which task, how many sentences, how long."""
    assert spec.train is not None
    return f"{spec.train.task}: {spec.train.test_sentences} sentences of {n:>3} words"


def tested_length(subject: str) -> int:
    """The sentence length a task accuracy row's `input` (task_subject) names."""
    return int(subject.rsplit(" of ", 1)[1].split()[0])


def accuracy_rows(spec: Spec, stacks: list[TrainedStack]) -> pd.DataFrame:
    """Task accuracy per trained encoding and test length, as tidy rows (COLUMNS) sorted as metrics.csv is."""
    assert spec.train is not None
    low, high = spec.train.train_lengths
    rows = []
    for stack in stacks:
        for n, accuracy in task_accuracy(spec, stack).items():
            verdict = TRAINED_LENGTH if low <= n <= high else UNTRAINED_LENGTH
            rows.append({"case": TASK_CASE, "input": task_subject(spec, n), "encoding": stack.choice.label,
                         "permutation": "", "permuted": "", "layer": spec.stack.n_layers, "head": None,
                         "metric": TASK_ACCURACY, "value": accuracy, "verdict": verdict})  # fmt: skip
    frame = pd.DataFrame(rows, columns=COLUMNS)
    frame["head"] = frame["head"].astype("Int64")
    return frame.sort_values(["input", "encoding"], kind="mergesort", ignore_index=True)
