"""Turn a measured error into a word a reader can scan: equivariant / invariant / order-sensitive.

The tolerance is derived from the dtype's machine epsilon: float64 round-off in these stacks is
~1e-16 and float32 ~1e-7, while the smallest genuine order effects measured are ~1e-2.
Must not import torch.
"""

from __future__ import annotations

import numpy as np

# Errors up to this many machine epsilons count as round-off, not as order sensitivity.
EPSILONS_OF_SLACK = 1000
EQUIVARIANCE_METRICS = ("equivariance", "attention_equivariance")
ORDER_SENSITIVE = "order-sensitive"


def tolerance(dtype: str) -> float:
    """1000 * eps: 2.2e-13 for float64, 1.2e-4 for float32."""
    return EPSILONS_OF_SLACK * float(np.finfo(dtype).eps)


# Zero distance between two occurrences of one word: the stack cannot tell them apart.
INDISTINGUISHABLE_METRICS = ("repeat_distance", "repeat_cosine")


def passing_word(metric: str) -> str:
    if metric in INDISTINGUISHABLE_METRICS:
        return "indistinguishable"
    return "equivariant" if metric in EQUIVARIANCE_METRICS else "invariant"


def verdicts(metrics: np.ndarray, values: np.ndarray, dtype: str) -> np.ndarray:
    """Vectorised verdict per row; NaN (undefined) counts as order-sensitive."""
    passing = np.array([passing_word(m) for m in metrics], dtype=object)
    return np.where(values <= tolerance(dtype), passing, ORDER_SENSITIVE)
