"""Equivariance: how far the hidden states are from following the words, ‖H_l(PX) − P H_l(X)‖ / ‖H_l(X)‖."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from orderlab.metrics.registry import BOTH, family, row_metric

if TYPE_CHECKING:
    import torch

    from orderlab.metrics.inputs import Reorderings

EQUIVARIANCE_FAMILY: Final = family("equivariance", "how far the hidden states are from following the words", True)
EQUIVARIANCE: Final = "equivariance"


@row_metric(
    EQUIVARIANCE, EQUIVARIANCE_FAMILY, BOTH, "permutation × layer 0..L",
    "`‖H_l(PX) − P H_l(X)‖ / ‖H_l(X)‖`; pretrained: on word states (each word's sub-token states averaged)",
    passing="equivariant",
)  # fmt: skip
def equivariance(c: Reorderings, layer: int, pooling: str | None) -> torch.Tensor:
    from orderlab.metrics.maths import equivariance_error

    return equivariance_error(c.output.hidden[layer], c.reference.hidden[layer][0], c.slots)
