"""LM log-probability (causal LMs): whether a model scores a reordering below the original sentence."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from orderlab.metrics.registry import PRETRAINED, family, row_metric

if TYPE_CHECKING:
    import torch

    from orderlab.metrics.inputs import Reorderings

LM_LOGPROB_FAMILY: Final = family("lm_logprob", "whether a causal LM scores a reordering below the original")
LOGPROB_CHANGE: Final = "logprob_change"
PERMUTATION_PREFERRED: Final = "permutation_preferred"
_ROWS: Final = "permutation × last layer L, causal LMs"


def logprobs(c: Reorderings) -> tuple[torch.Tensor, torch.Tensor]:
    """log P(PX) (B,) and log P(X) (a scalar)."""
    assert c.output.logprob is not None and c.reference.logprob is not None
    return c.output.logprob, c.reference.logprob[0]


@row_metric(
    LOGPROB_CHANGE, LM_LOGPROB_FAMILY, PRETRAINED, _ROWS,
    "`|log P(PX) − log P(X)| / |log P(X)|`, log P the sum of each token's log-probability given the ones before "
    "(after BOS)", layers="last", needs="log-probabilities", reduction="mean",
)  # fmt: skip
def logprob_change(c: Reorderings, layer: int, pooling: str | None) -> torch.Tensor:
    from orderlab.metrics.maths import ratio

    permuted, original = logprobs(c)
    return ratio((permuted - original).abs(), original.abs().expand_as(permuted))


@row_metric(
    PERMUTATION_PREFERRED, LM_LOGPROB_FAMILY, PRETRAINED, _ROWS,
    "1 when `log P(PX) > log P(X)`, else 0; its mean over permutations, the summary's rate, is the permutation "
    "acceptance of Sinha et al. 2021", layers="last", needs="log-probabilities", reduction="rate",
    noise_from=LOGPROB_CHANGE,
)  # fmt: skip
def permutation_preferred(c: Reorderings, layer: int, pooling: str | None) -> torch.Tensor:
    permuted, original = logprobs(c)
    return (permuted > original).to(permuted.dtype)
