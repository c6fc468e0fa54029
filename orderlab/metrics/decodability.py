"""Position decodability: whether a linear probe reads a token's slot off its state. The position probe's own pass
writes these rows (measure/probing.py), not the measuring loop."""

from __future__ import annotations

from typing import Final

from orderlab.metrics.registry import BOTH, family, metric

DECODABILITY_FAMILY: Final = family("decodability", "whether a linear probe can read a token's slot off its state")
_PROBE: Final = "the position probe (measure/probing.py)"
_ROWS: Final = "encoding × layer"

POSITION_ACCURACY: Final = metric(
    "position_accuracy", DECODABILITY_FAMILY, BOTH, _ROWS,
    "held-out accuracy of a ridge least-squares probe reading each token's slot off H_l, on seeded random "
    "sentences (the train: task's with `decodability.from_task`); verdict `above chance` when over 3 binomial "
    "standard deviations above chance, else `at chance`",
    computed_by=_PROBE, reduction="none", passing=None,
).name  # fmt: skip
POSITION_CHANCE: Final = metric(
    "position_chance", DECODABILITY_FAMILY, BOTH, _ROWS, "1 / length, the probe's chance accuracy; verdict "
    "`chance level`", computed_by=_PROBE, reduction="none", passing=None,
).name  # fmt: skip
POSITION_SLOT_ACCURACY: Final = metric(
    "position_slot_accuracy", DECODABILITY_FAMILY, BOTH, "encoding × layer × slot (column `slot`)",
    "`position_accuracy` over the held-out tokens at one slot; verdict `above chance` when over 3 binomial standard "
    "deviations above 1 / length, else `at chance`", computed_by=_PROBE, reduction="none", passing=None,
).name  # fmt: skip
