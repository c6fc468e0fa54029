"""What a trained spec adds to metrics.csv: the `weights` column (trained beside untrained) and task accuracy rows.

Task accuracy rows are tidy rows (vocabulary/columns.COLUMNS) of case `task`, one per trained encoding and test
length, at the last layer; their verdict says whether the length was trained on, so that length generalisation reads
off a column. Of DETAIL_COLUMNS they fill `length` and `chance` (the task's best order-blind accuracy, tasks.py).
"""

from __future__ import annotations

import pandas as pd

from orderlab.metrics import TASK_ACCURACY
from orderlab.spec.schema import Spec
from orderlab.train.tasks import TaskData
from orderlab.train.train import TrainedStack, task_accuracy, train_seed
from orderlab.vocabulary.columns import (
    COLUMNS,
    DETAIL_COLUMNS,
    TASK_CASE,
    TRAINED_LENGTH,
    UNTRAINED_LENGTH,
    detail_number,
    task_subject,
)


def training_work(spec: Spec) -> int:
    """Progress units of training one combination: every encoding's steps, each its batch of sentences."""
    assert spec.train is not None
    return len(spec.encodings) * spec.train.steps * spec.train.batch


def accuracy_rows(spec: Spec, stacks: list[TrainedStack]) -> pd.DataFrame:
    """Task accuracy per trained encoding and test length, with the length's chance, as tidy rows (COLUMNS and
    DETAIL_COLUMNS) sorted as metrics.csv is."""
    assert spec.train is not None
    low, high = spec.train.train_lengths
    data = TaskData(spec.train, train_seed(spec))
    chance = {n: detail_number(data.chance(n)) for n in range(spec.train.tested[0], spec.train.tested[1] + 1)}
    rows = []
    for stack in stacks:
        for n, accuracy in task_accuracy(spec, stack).items():
            verdict = TRAINED_LENGTH if low <= n <= high else UNTRAINED_LENGTH
            rows.append({"case": TASK_CASE, "input": task_subject(spec, n), "encoding": stack.choice.label,
                         "permutation": "", "permuted": "", "layer": spec.stack.n_layers, "head": None,
                         "metric": TASK_ACCURACY, "value": accuracy, "verdict": verdict,
                         "length": n, "slot": None, "chance": chance[n]})  # fmt: skip
    frame = pd.DataFrame(rows, columns=[*COLUMNS, *DETAIL_COLUMNS])
    frame = frame.astype({"head": "Int64", "length": "Int64", "slot": "Int64"})
    return frame.sort_values(["input", "encoding"], kind="mergesort", ignore_index=True)
