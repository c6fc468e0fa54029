"""Turn a measured error into a word a reader can scan: equivariant / invariant / order-sensitive.

The line between round-off and order sensitivity is measured, not assumed. A run computes the
reference pass f(X) twice, in its own precision and in its twin's (spec/fields.twin_dtype), and evaluates
every metric between the two (the identity permutation, whose exact value is 0): that is the round-off
the metric actually carries at this layer, head and input ("noise"). The difference carries the round-off
of the coarser of the two passes; rounding error grows linearly with the unit round-off, so where the run
computes finer than its twin (float64 against float32) the figure is scaled by the ratio of their epsilons
(`noise_scale`). What a pass computes in is what its ops compute in, not its dtype alone: a float64 run of
a model that takes its softmax or norms in float32 computes in float32 (models/precision.py), and is judged
by float32's round-off. A value is round-off when

    value <= max(SAFETY * noise, FLOOR * eps)

SAFETY covers the second, permuted pass (its own round-off, of the same size) with room to
spare; FLOOR covers a noise sample that happens to be tiny (metrics such as 1 - cos whose
round-off comes from the final arithmetic, not from the pass: eps of the dtype the metrics are
computed in, float32 for a 16-bit run). Values within the line are
written as 0: the digits were the machine's round-off, not a property of the model, and differ
between CPUs. A non-finite value is never a verdict. Definitions and evidence: docs/metrics.md.

Round-off is not resolution: a line wider than the resolution the run promises (the spec's `resolution`, relative,
DEFAULT_RESOLUTION unless set) would call an effect below it invariant that the precision cannot see (bfloat16's
line is often 0.1). A value within such a line is UNRESOLVED: kept as measured, neither passing nor order-sensitive
(the loop re-measures such rows in the twin's precision first, where the spec allows: measure/escalation.py). A 0/1
answer whose margin lies within its round-off is a TIE, left out of its rate.
Must not import torch.
"""

from __future__ import annotations

import numpy as np

from orderlab.metrics import METRICS
from orderlab.spec.fields import RESOLUTION
from orderlab.vocabulary.verdict_words import (
    DISTINGUISHABLE,
    INDISTINGUISHABLE,
    NON_FINITE,
    ORDER_SENSITIVE,
    PASSING_WORDS,
    TIE,
    UNRESOLVED,
    eps,
)

SAFETY = 16
FLOOR = 16
DEFAULT_RESOLUTION = RESOLUTION  # relative: the coarsest effect a run promises to tell from round-off (spec/fields.py)
METRIC_DTYPE = {"bfloat16": "float32", "float16": "float32"}  # the metrics of a 16-bit run are computed in float32


def coarser(a: str, b: str) -> str:
    """The less precise of two floating types."""
    return a if eps(a) >= eps(b) else b


def noise_scale(computed: str, twin: str) -> float:
    """What a run-vs-twin difference becomes as the run's own round-off: the difference carries the coarser pass's
    round-off, so eps(computed) / eps(coarser): 1 unless the run computes finer than its twin (eps64 / eps32 for a
    float64 run that computes in float64 throughout, against its float32 twin)."""
    return eps(computed) / eps(coarser(computed, twin))


def metric_dtype(dtype: str) -> str:
    """The dtype a run's metrics are computed in: its own, float32 for a 16-bit run."""
    return METRIC_DTYPE.get(dtype, dtype)


def round_off_lines(noise: np.ndarray, dtype: str) -> np.ndarray:
    """max(SAFETY * noise, FLOOR * eps) per row, from noise already scaled to the run's round-off (noise_scale), eps
    of the dtype its metrics are computed in; NaN where the noise is not finite."""
    noise = np.asarray(noise, dtype=np.float64)
    line = np.maximum(SAFETY * noise, FLOOR * eps(metric_dtype(dtype)))
    return np.where(np.isfinite(noise), line, np.nan)


def resolves(lines: np.ndarray, resolution: float) -> np.ndarray:
    """Whether a round-off line lets a value within it be called passing: the line is no wider than the resolution."""
    return np.asarray(lines, dtype=np.float64) <= resolution


def verdicts(
    metrics: np.ndarray, values: np.ndarray, lines: np.ndarray, resolution: float = DEFAULT_RESOLUTION
) -> np.ndarray:
    """Per row: the passing word within the line (UNRESOLVED where the line is wider than `resolution`),
    order-sensitive above it, non-finite if value or line is NaN/inf. A 0/1 flag gets its own words (its `flag`),
    and a value not judged by round-off (passing None) none: ''."""
    values, lines = np.asarray(values, dtype=np.float64), np.asarray(lines, dtype=np.float64)
    records = {name: METRICS.get(name) for name in set(metrics)}
    passing = np.array([records[m].passing or "" for m in metrics], dtype=object)  # "indistinguishable", ...
    within = np.where(resolves(lines, resolution), passing, UNRESOLVED)
    judged = np.where(values <= lines, within, ORDER_SENSITIVE)
    for name, record in records.items():
        rows = metrics == name
        if record.flag is not None:
            judged[rows] = np.where(values[rows] >= 0.5, record.flag[1], record.flag[0])
        elif record.passing is None:
            judged[rows] = ""
    by_round_off = passing != ""
    finite = np.isfinite(values) & (np.isfinite(lines) | ~by_round_off)
    return np.where(finite, judged, NON_FINITE)


def without_order(verdicts: np.ndarray) -> np.ndarray:
    """A pair of different words' verdicts: indistinguishable within the round-off, distinguishable above it; a row
    with no verdict (a metric not judged by round-off, such as a minimal pair's preference), an unresolved row and a
    tie keep theirs."""
    verdicts = np.asarray(verdicts, dtype=object)
    judged = np.where(verdicts == ORDER_SENSITIVE, DISTINGUISHABLE, INDISTINGUISHABLE)
    return np.where(np.isin(verdicts, [NON_FINITE, "", UNRESOLVED, TIE]), verdicts, judged)


def canonical(values: np.ndarray, verdicts: np.ndarray) -> np.ndarray:
    """Values judged round-off become 0, so results do not churn with the CPU; all others stay as measured."""
    return np.where(np.isin(verdicts, PASSING_WORDS), 0.0, np.asarray(values, dtype=np.float64))


def ties(margins: np.ndarray, noise: float, sizes: np.ndarray, dtype: str) -> np.ndarray:
    """Whether each 0/1 answer's margin (a difference of two log-probabilities) lies within its round-off: SAFETY x
    the measured round-off of one side, at least FLOOR x eps x the size of the values compared (eps of the dtype
    the metrics are computed in). A non-finite margin or round-off is no tie (it reads non-finite)."""
    margins, sizes = np.abs(np.asarray(margins, dtype=np.float64)), np.abs(np.asarray(sizes, dtype=np.float64))
    line = np.maximum(SAFETY * noise, FLOOR * eps(metric_dtype(dtype)) * sizes)
    with np.errstate(invalid="ignore"):
        return np.asarray(margins <= line, dtype=bool)
