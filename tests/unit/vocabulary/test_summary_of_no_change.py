"""A sentence's running summary (vocabulary/digest.Summary): a mean or rate over the orders that change the sentence
has no rows where none does; its mean of nothing was a NaN written with the max's verdict (issue 42)."""

from __future__ import annotations

import numpy as np

from orderlab.vocabulary.digest import Summary


def summary_of(words: list[str], chunk: list[tuple[int, ...]]) -> Summary:
    summary = Summary("permutation", " ".join(words), "seeded", words)
    for metric in ("equivariance", "logprob_change", "permutation_preferred"):
        summary.fold((1, None, metric), 0.0, chunk[0], np.zeros(len(chunk)), chunk)
    return summary


def test_a_mean_or_rate_that_no_changed_order_reaches_has_no_rows_and_a_max_keeps_its_own():
    unchanged = summary_of(["dog", "dog"], [(0, 1), (1, 0)]).frame()  # the identity, and a swap of the two copies
    assert set(unchanged["metric"]) == {"equivariance"}
    changed = summary_of(["dog", "man"], [(0, 1), (1, 0)]).frame()
    assert set(changed["metric"]) == {"equivariance", "logprob_change", "permutation_preferred"}
    assert not changed["value"].isna().any()
