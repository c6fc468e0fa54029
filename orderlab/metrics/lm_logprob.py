"""LM log-probability (causal LMs): how a model scores each reordering against the original sentence.

Per row, log P(PX), log P(X) and their signed difference, so that orders can be ranked from metrics.csv alone; the
relative change; and the 0/1 flag whose share over the distinct reorderings (never the identity: measure/loop.py) is
the acceptance rate, with the rank of the original among its reorderings beside it in the summary.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from orderlab.metrics.registry import PRETRAINED, family, metric, row_metric

if TYPE_CHECKING:
    import torch

    from orderlab.metrics.inputs import Reorderings

LM_LOGPROB_FAMILY: Final = family("lm_logprob", "whether a causal LM scores a reordering below the original")
LOGPROB: Final = "logprob"
LOGPROB_REFERENCE: Final = "logprob_reference"
LOGPROB_DELTA: Final = "logprob_delta"
LOGPROB_CHANGE: Final = "logprob_change"
PERMUTATION_PREFERRED: Final = "permutation_preferred"
ORIGINAL_RANK: Final = "original_rank"
PREFERRED, NOT_PREFERRED = "preferred", "not preferred"  # a flag's verdicts: the reordering scored above X, or not
_ROWS: Final = "permutation × last layer L, causal LMs"
_LOG_P: Final = "log P the sum of each token's log-probability given the ones before (after BOS)"


def logprobs(c: Reorderings) -> tuple[torch.Tensor, torch.Tensor]:
    """log P(PX) (B,) and log P(X) (a scalar)."""
    assert c.output.logprob is not None and c.reference.logprob is not None
    return c.output.logprob, c.reference.logprob[0]


@row_metric(
    LOGPROB, LM_LOGPROB_FAMILY, PRETRAINED, _ROWS, f"`log P(PX)`, the reordering's score, {_LOG_P}; no verdict",
    layers="last", needs="log-probabilities", reduction="none", passing=None,
)  # fmt: skip
def logprob(c: Reorderings, layer: int, pooling: str | None) -> torch.Tensor:
    return logprobs(c)[0]


@row_metric(
    LOGPROB_REFERENCE, LM_LOGPROB_FAMILY, PRETRAINED, _ROWS, "`log P(X)`, the original's score (one value per "
    "sentence, on each of its rows); no verdict", layers="last", needs="log-probabilities", reduction="none",
    passing=None,
)  # fmt: skip
def logprob_reference(c: Reorderings, layer: int, pooling: str | None) -> torch.Tensor:
    permuted, original = logprobs(c)
    return original.expand_as(permuted)


@row_metric(
    LOGPROB_DELTA, LM_LOGPROB_FAMILY, PRETRAINED, _ROWS, "`log P(PX) − log P(X)`, signed: above 0 the model prefers "
    "the reordering; no verdict", layers="last", needs="log-probabilities", reduction="none", passing=None,
)  # fmt: skip
def logprob_delta(c: Reorderings, layer: int, pooling: str | None) -> torch.Tensor:
    permuted, original = logprobs(c)
    return permuted - original


@row_metric(
    LOGPROB_CHANGE, LM_LOGPROB_FAMILY, PRETRAINED, _ROWS,
    f"`|log P(PX) − log P(X)| / |log P(X)|`, {_LOG_P}", layers="last", needs="log-probabilities", reduction="mean",
)  # fmt: skip
def logprob_change(c: Reorderings, layer: int, pooling: str | None) -> torch.Tensor:
    from orderlab.metrics.maths import ratio

    permuted, original = logprobs(c)
    return ratio((permuted - original).abs(), original.abs().expand_as(permuted))


@row_metric(
    PERMUTATION_PREFERRED, LM_LOGPROB_FAMILY, PRETRAINED, _ROWS,
    "1 when `log P(PX) > log P(X)`, else 0; its share over the distinct reorderings (the identity left out), the "
    "summary's rate with its count, is the permutation acceptance of Sinha et al. 2021",
    layers="last", needs="log-probabilities", reduction="rate", passing=None, flag=(NOT_PREFERRED, PREFERRED),
)  # fmt: skip
def permutation_preferred(c: Reorderings, layer: int, pooling: str | None) -> torch.Tensor:
    permuted, original = logprobs(c)
    return preferred(permuted, original)


def preferred(first: torch.Tensor, second: torch.Tensor) -> torch.Tensor:
    """1 where log P `first` > `second`, else 0; NaN where either is not finite: a NaN comparison is False, and a
    non-finite log-probability must make the answer non-finite, never a confident 0 in a rate."""
    import torch

    answer = (first > second).to(first.dtype)
    return torch.where(torch.isfinite(first) & torch.isfinite(second), answer, torch.nan)


metric(
    ORIGINAL_RANK, LM_LOGPROB_FAMILY, PRETRAINED, "sentence × last layer L (summary.csv only), causal LMs",
    f"the original's rank among itself and its distinct reorderings by log P: 1 + how many `{PERMUTATION_PREFERRED}` "
    "marks, of how many sentences (1: the model scores the original above every reordering; ties go to the original)",
    computed_by="the summary, from permutation_preferred", reduction="rank", passing=None,
)  # fmt: skip
