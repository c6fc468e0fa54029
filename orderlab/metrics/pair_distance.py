"""Pair distance: how far apart a probe's two sentences end up, by their pooled sentence vectors."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from orderlab.metrics.inputs import vectors
from orderlab.metrics.registry import BOTH, PRETRAINED, family, row_metric

if TYPE_CHECKING:
    import torch

    from orderlab.metrics.inputs import ProbePasses

PAIR_DISTANCE_FAMILY: Final = family("pair_distance", "how far apart a probe's two sentences end up", True)
PAIR_COSINE: Final = "pair_cosine"
PAIR_L2: Final = "pair_l2"
PAIR_COSINE_CLS: Final = "pair_cosine_cls"
_ROWS: Final = "probe × layer"


@row_metric(PAIR_COSINE_CLS, PAIR_DISTANCE_FAMILY, PRETRAINED, _ROWS, "`1 − cos(H_l(a)[CLS], H_l(b)[CLS])`",
            compares="probes", pooling="cls")  # fmt: skip
@row_metric(
    PAIR_COSINE, PAIR_DISTANCE_FAMILY, BOTH, _ROWS, "`1 − cos(mean H_l(a), mean H_l(b))` for a probe pair (a, b)",
    compares="probes", pooling="mean",
)  # fmt: skip
def pair_cosine(p: ProbePasses, layer: int, pooling: str | None) -> torch.Tensor:
    """1 - cos of a's and b's pooled sentence vectors."""
    from orderlab.metrics.maths import cosine_distance

    return cosine_distance(vectors(p.a, pooling, layer), vectors(p.b, pooling, layer))


@row_metric(PAIR_L2, PAIR_DISTANCE_FAMILY, BOTH, _ROWS, "`‖mean H_l(b) − mean H_l(a)‖ / ‖mean H_l(a)‖`",
            compares="probes", pooling="mean")  # fmt: skip
def pair_l2(p: ProbePasses, layer: int, pooling: str | None) -> torch.Tensor:
    """Relative L2 distance of b's pooled sentence vector from a's."""
    from orderlab.metrics.maths import relative_l2

    return relative_l2(vectors(p.a, pooling, layer), vectors(p.b, pooling, layer))
