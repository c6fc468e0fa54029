"""The words of a verdict column, and the unit round-off of each floating type they are judged by.

The rule that picks a word (measure/verdicts.py) measures; these words are what every view and the baseline
comparison read back. Never imports torch.
"""

from __future__ import annotations

import typing

from orderlab.metrics import Passing

ORDER_SENSITIVE = "order-sensitive"
NON_FINITE = "non-finite"
UNRESOLVED = "unresolved"  # within a round-off line wider than the resolution: neither passing nor order-sensitive
TIE = "tie"  # a 0/1 answer whose margin lies within its round-off: neither answer, left out of its rate
PASSING_WORDS = typing.get_args(Passing)  # "equivariant", "invariant", ...: within the round-off
# A pair of sentences that is not a reordering (core/pair_relations.py) is told apart or not: never an order verdict.
DISTINGUISHABLE = "distinguishable"
INDISTINGUISHABLE: Passing = "indistinguishable"

# How much of the difference between two orders' outputs an activation patch recovers (measure/patching.py): none
# (its share within the round-off of 0), the whole (within that of 1), or part.
PATCH_NONE = "recovers none"
PATCH_WHOLE = "recovers all"
PATCH_PART = "recovers part"

# The unit round-off (machine epsilon) of each floating type a run may compute in (numpy has no bfloat16).
EPSILON = {"bfloat16": 2.0**-7, "float16": 2.0**-10, "float32": 2.0**-23, "float64": 2.0**-52}


def eps(dtype: str) -> float:
    return EPSILON[dtype]
