"""Task accuracy of trained stacks, by test length. A train: block's own pass writes these rows
(measure/task_accuracy.py): they need no `metrics:` entry."""

from __future__ import annotations

from typing import Final

from orderlab.metrics.registry import STACK, metric

TASK_ACCURACY: Final = metric(
    "task_accuracy", None, STACK, "trained encoding × test length",
    "a trained stack's accuracy on its `train:` task over held-out sentences of one length (column `length`); "
    "column `chance`: the task's best order-blind accuracy; verdict `trained length` or `untrained length` "
    "(length generalisation)", computed_by="a train: block (measure/task_accuracy.py)", reduction="none",
    passing=None,
).name  # fmt: skip
