"""Turn a measured error into a word a reader can scan: equivariant / invariant / order-sensitive.

The line between round-off and order sensitivity is measured, not assumed. A run computes the
reference pass f(X) twice, in float32 and in float64, and evaluates every metric between the two
(the identity permutation, whose exact value is 0): that is the round-off the metric actually
carries at this layer, head and input ("noise"). Rounding error grows linearly with the unit
round-off, so a float64 run scales the float32 figure by eps64 / eps32. A value is round-off when

    value <= max(SAFETY * noise, FLOOR * eps)

SAFETY covers the second, permuted pass (its own round-off, of the same size) with room to
spare; FLOOR covers a noise sample that happens to be tiny (metrics such as 1 - cos whose
round-off comes from the final arithmetic, not from the pass). Values within the line are
written as 0: the digits were the machine's round-off, not a property of the model, and differ
between CPUs. A non-finite value is never a verdict. Definitions and evidence: docs/metrics.md.
Must not import torch.
"""

from __future__ import annotations

import typing

import numpy as np

from orderlab.metrics import METRICS, Passing

SAFETY = 16
FLOOR = 16
ORDER_SENSITIVE = "order-sensitive"
NON_FINITE = "non-finite"
NOISE_REFERENCE_DTYPE = "float32"


def eps(dtype: str) -> float:
    return float(np.finfo(dtype).eps)


def noise_scale(dtype: str) -> float:
    """What a float32-vs-float64 difference becomes in `dtype`: 1 for float32, eps64 / eps32 for float64."""
    return eps(dtype) / eps(NOISE_REFERENCE_DTYPE)


def round_off_lines(noise: np.ndarray, dtype: str) -> np.ndarray:
    """max(SAFETY * noise, FLOOR * eps) per row, from float32-vs-float64 noise; NaN where the noise is not finite."""
    noise = np.asarray(noise, dtype=np.float64) * noise_scale(dtype)
    line = np.maximum(SAFETY * noise, FLOOR * eps(dtype))
    return np.where(np.isfinite(noise), line, np.nan)


PASSING_WORDS = typing.get_args(Passing)


def verdicts(metrics: np.ndarray, values: np.ndarray, lines: np.ndarray) -> np.ndarray:
    """Per row: the passing word within the line, order-sensitive above it, non-finite if value or line is NaN/inf;
    none for a finite value of a metric that gives no verdict (registered with passing=None: a minimal pair's
    preference)."""
    values, lines = np.asarray(values, dtype=np.float64), np.asarray(lines, dtype=np.float64)
    words = {name: METRICS.get(name).passing for name in set(metrics)}  # e.g. "indistinguishable" for repeat_distance
    passing = np.array([words[m] for m in metrics], dtype=object)
    judged = np.where(values <= lines, passing, ORDER_SENSITIVE)
    finite = np.isfinite(values) & np.isfinite(lines)
    judged = np.where(finite, judged, NON_FINITE)
    judged[(passing == None) & np.isfinite(values)] = None  # noqa: E711 (element-wise): no verdict, unless NaN/inf
    return judged


def canonical(values: np.ndarray, verdicts: np.ndarray) -> np.ndarray:
    """Values judged round-off become 0, so results do not churn with the CPU; all others stay as measured."""
    passing = np.isin(verdicts, PASSING_WORDS)
    return np.where(passing, 0.0, np.asarray(values, dtype=np.float64))
