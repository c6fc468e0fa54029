"""A non-finite log-probability makes every 0/1 answer that depends on it non-finite (issue 42): after a hook made
the states NaN, permutation_preferred read 'not preferred' (0) in every row and a rate of 0 in summary.csv."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from orderlab.spec.extras import installed

pytestmark = [
    pytest.mark.skipif(not installed("transformers"), reason="needs the optional extra [hf]"),
    pytest.mark.slow,
]

SPEC = {
    "name": "nan_states",
    "model": {"kind": "hf", "family": "gpt2", "d_model": 16, "n_heads": 2, "n_layers": 2, "dtype": "float32"},
    "inputs": [{"sentence": "dog bites man", "permutations": "all"}],
    "probes": [{"pair": ["the dog bites", "the dog bite"], "relation": "minimal_pair"}],
    "metrics": ["lm_logprob", "minimal_pairs"],
}


def nan_states(tensor):
    return tensor * math.nan


def test_nan_states_make_the_preferred_answers_and_their_rates_non_finite(tmp_path):
    import orderlab.api as ol

    result = ol.run(SPEC, tmp_path, hooks={"2.output": nan_states}, progress=False)
    answers = result.metrics[result.metrics["metric"].isin(["permutation_preferred", "minimal_pair_preferred"])]
    assert len(answers) > 0 and answers["value"].isna().all()
    assert set(answers["verdict"]) == {"non-finite"}
    summary = pd.read_csv(tmp_path / "nan_states" / "summary.csv")
    rates = summary[summary["metric"].isin(["permutation_preferred", "minimal_pair_preferred"])]
    assert len(rates) > 0
    for column in [c for c in rates.columns if c.endswith("verdict")]:
        assert set(rates[column]) == {"non-finite"}, column
