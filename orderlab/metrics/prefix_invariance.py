"""Prefix invariance (causal models): whether the last word's state sees the order of the words before it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from orderlab.metrics.registry import BOTH, family, row_metric

if TYPE_CHECKING:
    import torch

    from orderlab.metrics.inputs import Reorderings

PREFIX_INVARIANCE_FAMILY: Final = family("prefix_invariance", "whether the last word sees the order before it")
PREFIX_INVARIANCE: Final = "prefix_invariance"


@row_metric(
    PREFIX_INVARIANCE, PREFIX_INVARIANCE_FAMILY, BOTH, "permutation keeping the last word × layer",
    "`‖H_l(PX)[n] − H_l(X)[n]‖ / ‖H_l(X)[n]‖` at the last slot n, for the permutations that keep the last word",
    keep="last word kept",
)  # fmt: skip
def prefix_invariance(c: Reorderings, layer: int, pooling: str | None) -> torch.Tensor:
    from orderlab.metrics.maths import prefix_invariance_error

    return prefix_invariance_error(c.output.hidden[layer], c.reference.hidden[layer][0])
