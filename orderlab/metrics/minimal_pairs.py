"""Minimal pairs (causal LMs): whether a model scores a probe's first sentence, the grammatical one, above its second,
its minimal counterpart, as BLiMP (Warstadt et al. 2020) does; its rate over the probes of a condition is the
accuracy, with its count (summary.csv's `minimal pairs` row)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from orderlab.metrics.lm_logprob import preferred
from orderlab.metrics.registry import PRETRAINED, family, row_metric

if TYPE_CHECKING:
    import torch

    from orderlab.metrics.inputs import ProbePasses

MINIMAL_PAIRS_FAMILY: Final = family(
    "minimal_pairs", "whether a causal LM scores each probe's first (grammatical) sentence above its second"
)
MINIMAL_PAIR_PREFERRED: Final = "minimal_pair_preferred"


@row_metric(
    MINIMAL_PAIR_PREFERRED, MINIMAL_PAIRS_FAMILY, PRETRAINED, "probe × last layer L, causal LMs",
    "1 when `log P(a) > log P(b)` for a probe (a, b), a grammatical and b its minimal counterpart, else 0; its rate "
    "over a condition's probes is BLiMP's accuracy", compares="probes", layers="last", needs="log-probabilities",
    reduction="rate", passing=None,
)  # fmt: skip
def minimal_pair_preferred(p: ProbePasses, layer: int, pooling: str | None) -> torch.Tensor:
    assert p.a.logprob is not None and p.b.logprob is not None
    return preferred(p.a.logprob, p.b.logprob)
