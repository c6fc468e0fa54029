"""A classifier's answers per order, from its logits: the predicted label, its logit margin over the runner-up, the
probability of the gold label, and whether the prediction is a tie (its margin within the round-off measured for the
example: measure/verdicts.ties, the one rule for every 0/1 answer). Pure numpy; the passes are task_measure.py's."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from orderlab.measure.verdicts import ties

Floats = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Answers:
    """Per order (row of the logits): predicted id, margin, gold probability (NaN without a gold label), tie, and
    whether its logits are finite (a non-finite one is no answer at all: never a verdict, never counted)."""

    predicted: npt.NDArray[np.int64]
    margin: Floats
    gold_probability: Floats
    tied: npt.NDArray[np.bool_]
    finite: npt.NDArray[np.bool_]

    @property
    def decided(self) -> npt.NDArray[np.bool_]:
        """The answers that count: finite and not tied."""
        return self.finite & ~self.tied


def answers(logits: Floats, gold: int | None, round_off: float, dtype: str) -> Answers:
    """logits (orders, labels) in float64; round_off: how far this example's logits moved in the twin precision."""
    logits = np.asarray(logits, dtype=np.float64)
    top_two = np.sort(logits, axis=1)[:, -2:]
    margin = top_two[:, 1] - top_two[:, 0]
    size = np.abs(logits).max(axis=1)
    shifted = logits - logits.max(axis=1, keepdims=True)
    probabilities = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
    gold_probability = np.full(len(logits), np.nan) if gold is None else probabilities[:, gold]
    finite = np.asarray(np.isfinite(logits).all(axis=1), dtype=bool)
    tied = ties(margin, round_off, size, dtype) & finite
    return Answers(logits.argmax(axis=1).astype(np.int64), margin, gold_probability, tied, finite)
