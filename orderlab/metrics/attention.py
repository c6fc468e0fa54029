"""Attention equivariance: how far each head's attention map is from following the words."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from orderlab.core.hook_points import hook_name
from orderlab.metrics.registry import BOTH, family, row_metric

if TYPE_CHECKING:
    import torch

    from orderlab.metrics.inputs import Reorderings

ATTENTION_FAMILY: Final = family("attention", "how far each head's attention map is from following the words", True)
ATTENTION_EQUIVARIANCE: Final = "attention_equivariance"


@row_metric(
    ATTENTION_EQUIVARIANCE, ATTENTION_FAMILY, BOTH, "permutation × layer 1..L × head",
    "`‖A_l,h(PX) − P A_l,h(X) Pᵀ‖ / ‖A_l,h(X)‖`; pretrained: on sub-token slots (whole words moved)",
    layers="maps", needs="attention maps", per_head=True, passing="equivariant",
)  # fmt: skip
def attention_equivariance(c: Reorderings, layer: int, pooling: str | None) -> torch.Tensor:
    from orderlab.metrics.maths import attention_equivariance_error

    assert c.model_slots is not None
    pattern = hook_name(layer, "pattern")  # the maps travel as hook points (one channel)
    return attention_equivariance_error(c.output.hooks[pattern], c.reference.hooks[pattern][0], c.model_slots)
