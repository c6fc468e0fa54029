"""An exact running sum of float64 values, so a streamed mean does not depend on how it was chunked.

Adding chunk sums in floating point rounds differently for different chunk sizes. Here every
value m * 2**e (numpy.frexp) is split into integer mantissa halves that are binned by exponent;
the bins hold integers below 2**53, so float64 bin totals are exact, and the total is formed once,
exactly, as a Fraction. Cost per value: a few numpy operations. Must not import torch.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

MANTISSA_BITS = 53
HALF_BITS = 26  # a mantissa below 2**53 splits into a high part below 2**27 and a low part below 2**26
EXPONENTS = 2200  # frexp exponents of finite float64 run from -1073 to 1024
EXPONENT_OFFSET = 1100


class ExactSum:
    """Sum of everything passed to `add`, exact until more than 2**26 values are added."""

    def __init__(self) -> None:
        self.high = np.zeros(EXPONENTS)  # high[e]: sum of high mantissa halves with exponent e
        self.low = np.zeros(EXPONENTS)
        self.special = 0.0  # sum of the infinities and NaNs, which have no exact value

    def add(self, values: np.ndarray) -> None:
        values = np.asarray(values, dtype=np.float64).ravel()
        finite = np.isfinite(values)
        self.special += float(values[~finite].sum())
        mantissa, exponent = np.frexp(values[finite])
        whole = (mantissa * 2.0**MANTISSA_BITS).astype(np.int64)  # exact: |whole| < 2**53
        high = whole >> HALF_BITS
        bins = exponent + EXPONENT_OFFSET
        self.high += np.bincount(bins, weights=high.astype(np.float64), minlength=EXPONENTS)
        self.low += np.bincount(bins, weights=(whole - (high << HALF_BITS)).astype(np.float64), minlength=EXPONENTS)

    def absorb(self, other: ExactSum) -> None:
        """Add everything `other` summed (a shard's values): exact, as if its values had been added here."""
        self.high += other.high
        self.low += other.low
        self.special += other.special

    def state(self) -> dict[str, object]:
        """Plain data (the nonzero bins as integers), for a shard's partial summary on disk; `from_state` reads it."""
        used = np.flatnonzero(self.high.astype(bool) | self.low.astype(bool))
        return {
            "bins": [int(i) for i in used], "high": [int(self.high[i]) for i in used],
            "low": [int(self.low[i]) for i in used], "special": self.special,
        }  # fmt: skip

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> ExactSum:
        exact = cls()
        exact.high[state["bins"]] = state["high"]
        exact.low[state["bins"]] = state["low"]
        exact.special = float(state["special"])
        return exact

    def total(self) -> Fraction:
        """The exact sum (finite values only; see `special`)."""
        total = Fraction(0)
        for index in np.flatnonzero(self.high.astype(bool) | self.low.astype(bool)):
            whole = (int(self.high[index]) << HALF_BITS) + int(self.low[index])
            total += Fraction(whole) * Fraction(2) ** (int(index) - EXPONENT_OFFSET - MANTISSA_BITS)
        return total

    def mean(self, count: int) -> float:
        """The correctly rounded mean of `count` added values (inf or NaN if any value was)."""
        if self.special != 0 or self.special != self.special:
            return self.special
        return float(self.total() / count) if count else float("nan")
