"""Corpus mode's similarities of each sentence with its shuffles, at the last layer. Corpus mode's own pass writes
these rows (measure/corpus.py): they need no `metrics:` entry."""

from __future__ import annotations

from typing import Final

from orderlab.metrics.registry import PRETRAINED, metric

_CORPUS: Final = "corpus mode (measure/corpus.py)"
_ROWS: Final = "corpus sentence × shuffle"

SIMILARITY_MEAN: Final = metric(
    "similarity_mean", None, PRETRAINED, _ROWS,
    "`cos(mean H_L(shuffle), mean H_L(sentence))` at the last layer L, attention-masked means over tokens",
    computed_by=_CORPUS, reduction="corpus", passing=None, pooling="mean",
).name  # fmt: skip
SIMILARITY_CLS: Final = metric(
    "similarity_cls", None, PRETRAINED, _ROWS, "`cos(H_L(shuffle)[CLS], H_L(sentence)[CLS])` at the last layer L",
    computed_by=_CORPUS, reduction="corpus", passing=None, pooling="cls",
).name  # fmt: skip
