"""Token shift: how far each word's state moves, word occurrences matched (the k-th "the" with the k-th "the"),
over a permutation's words or a probe pair's when the second sentence reorders the first."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from orderlab.metrics.registry import BOTH, METRICS, family, row_metric

if TYPE_CHECKING:
    import torch

    from orderlab.metrics.inputs import ProbePasses, Reorderings

TOKEN_SHIFT_FAMILY: Final = family("token_shift", "how far each word's state moves, words matched by occurrence", True)
TOKEN_SHIFT: Final = "token_shift"


@row_metric(
    TOKEN_SHIFT, TOKEN_SHIFT_FAMILY, BOTH, "permutation or probe × layer",
    "mean over slots i of `‖H_l(PX)[i] − H_l(X)[m(i)]‖ / ‖H_l(X)[m(i)]‖`, m matching word occurrences "
    '(the k-th "the" with the k-th "the"); pretrained: on word states',
)  # fmt: skip
def token_shift(c: Reorderings, layer: int, pooling: str | None) -> torch.Tensor:
    from orderlab.metrics.maths import token_shift as shift

    return shift(c.output.hidden[layer], c.reference.hidden[layer][0], c.matching)


# On a probe pair only when its second sentence reorders the first's words: else occurrences cannot be matched.
@METRICS.get(TOKEN_SHIFT).also_on("probes", needs="a reordering")
def pair_token_shift(p: ProbePasses, layer: int, pooling: str | None) -> torch.Tensor:
    from orderlab.metrics.maths import token_shift as shift

    assert p.matching is not None
    return shift(p.b.hidden[layer], p.a.hidden[layer][0], p.matching)
