"""Invariance: how far pooled sentence vectors move when the words move, one row metric per sentence vector."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from orderlab.metrics.inputs import vectors
from orderlab.metrics.registry import BOTH, PRETRAINED, STACK, family, row_metric

if TYPE_CHECKING:
    import torch

    from orderlab.metrics.inputs import Reorderings

INVARIANCE_FAMILY: Final = family("invariance", "how far pooled sentence vectors move when the words move", True)
INVARIANCE_MEAN: Final = "invariance_mean"
INVARIANCE_MAX: Final = "invariance_max"
INVARIANCE_FIRST: Final = "invariance_first"
INVARIANCE_LAST: Final = "invariance_last"
COSINE_CLS: Final = "cosine_cls"
COSINE_MEAN: Final = "cosine_mean"
INVARIANCE_CLS: Final = "invariance_cls"
_ROWS: Final = "permutation × layer"


@row_metric(COSINE_MEAN, INVARIANCE_FAMILY, PRETRAINED, _ROWS,
            "`1 − cos(mean H_l(PX), mean H_l(X))`, means over all tokens", pooling="mean")  # fmt: skip
@row_metric(COSINE_CLS, INVARIANCE_FAMILY, PRETRAINED, _ROWS, "`1 − cos(H_l(PX)[CLS], H_l(X)[CLS])`",
            pooling="cls")  # fmt: skip
def pooled_cosine(c: Reorderings, layer: int, pooling: str | None) -> torch.Tensor:
    """1 - cos of the pooled sentence vectors."""
    from orderlab.metrics.maths import cosine_distance

    return cosine_distance(vectors(c.output, pooling, layer), vectors(c.reference, pooling, layer))


@row_metric(INVARIANCE_CLS, INVARIANCE_FAMILY, PRETRAINED, _ROWS, "as `invariance_mean`, pool = [CLS]", pooling="cls")
@row_metric(INVARIANCE_LAST, INVARIANCE_FAMILY, STACK, _ROWS, "as `invariance_mean`, pool = the last slot",
            pooling="last")  # fmt: skip
@row_metric(INVARIANCE_FIRST, INVARIANCE_FAMILY, STACK, _ROWS, "as `invariance_mean`, pool = the first slot",
            pooling="first")  # fmt: skip
@row_metric(INVARIANCE_MAX, INVARIANCE_FAMILY, STACK, _ROWS, "as `invariance_mean`, pool = element-wise max over slots",
            pooling="max")  # fmt: skip
@row_metric(
    INVARIANCE_MEAN, INVARIANCE_FAMILY, BOTH, _ROWS,
    "`‖pool H_l(PX) − pool H_l(X)‖ / ‖pool H_l(X)‖`, pool = mean over slots (pretrained: over all tokens)",
    pooling="mean",
)  # fmt: skip
def pooled_change(c: Reorderings, layer: int, pooling: str | None) -> torch.Tensor:
    """Relative L2 change of the pooled sentence vector."""
    from orderlab.metrics.maths import relative_l2

    return relative_l2(vectors(c.reference, pooling, layer)[0], vectors(c.output, pooling, layer))
