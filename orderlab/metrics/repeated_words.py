"""Repeated words: whether two copies of one word can be told apart, judged by token_shift's round-off."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from orderlab.metrics.registry import BOTH, family, row_metric
from orderlab.metrics.token_shift import TOKEN_SHIFT

if TYPE_CHECKING:
    import torch

    from orderlab.metrics.inputs import Reorderings

REPEATED_WORDS_FAMILY: Final = family("repeated_words", "whether two copies of one word can be told apart")
REPEAT_COSINE: Final = "repeat_cosine"
REPEAT_DISTANCE: Final = "repeat_distance"
_ROWS: Final = "permutation × layer, sentences repeating a word"


@row_metric(
    REPEAT_COSINE, REPEATED_WORDS_FAMILY, BOTH, _ROWS,
    "mean over the slot pairs (i, j) holding the same word of `1 − cos(H_l(PX)[i], H_l(PX)[j])`",
    needs="repeated words", passing="indistinguishable", noise_from=TOKEN_SHIFT,
)  # fmt: skip
def repeat_cosine(c: Reorderings, layer: int, pooling: str | None) -> torch.Tensor:
    from orderlab.metrics.maths import repeated_word_distance

    assert c.repeats is not None
    return repeated_word_distance(c.output.hidden[layer], c.repeats, cosine=True)


@row_metric(
    REPEAT_DISTANCE, REPEATED_WORDS_FAMILY, BOTH, _ROWS,
    "mean over the slot pairs (i, j) holding the same word of `‖H_l(PX)[i] − H_l(PX)[j]‖ / ‖H_l(PX)[i]‖`",
    needs="repeated words", passing="indistinguishable", noise_from=TOKEN_SHIFT,
)  # fmt: skip
def repeat_distance(c: Reorderings, layer: int, pooling: str | None) -> torch.Tensor:
    from orderlab.metrics.maths import repeated_word_distance

    assert c.repeats is not None
    return repeated_word_distance(c.output.hidden[layer], c.repeats)
