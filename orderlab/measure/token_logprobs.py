"""token_logprobs.csv: a causal LM's log-probability of each token given the ones before it (`token_logprobs: true`).

Every input and probe sentence as written, under each condition, from one dense pass each: the numbers whose sum is
the lm_logprob metrics' log P(X). `word_index` names the word a token belongs to (from 0; empty for a special
token). Compute only: commands/run.py writes the file.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from orderlab.core.text import tokenize
from orderlab.measure.adapters import Adapter
from orderlab.spec.schema import Spec, written_sentences
from orderlab.spec.sweep import SweptValue

COLUMNS = ["encoding", "sentence", "token_index", "token", "word_index", "logprob"]


def token_logprob_rows(spec: Spec, adapters: list[Adapter], columns: Mapping[str, SweptValue]) -> pd.DataFrame:
    """One row per condition x sentence x token after BOS, the sweep combination's columns first."""
    from orderlab.models.pretrained import PretrainedSentence  # lazy: the hf extra's model code

    rows = []
    for adapter in adapters:
        for sentence in written_sentences(spec):
            bound = adapter.sentence(tokenize(sentence, spec.embeddings.lowercase))
            assert isinstance(bound, PretrainedSentence), "token_logprobs needs a causal LM (spec/relations.py)"
            for index, (token, word, logprob) in enumerate(bound.token_logprobs(), start=1):
                rows.append((*columns.values(), adapter.label, sentence, index, token, word, logprob))
    frame = pd.DataFrame(rows, columns=[*columns, *COLUMNS])
    frame["word_index"] = frame["word_index"].astype("Int64")
    return frame
