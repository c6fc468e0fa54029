"""metrics: [minimal_pairs]: per probe (a grammatical sentence, b its minimal counterpart) and condition, 1 when a
causal LM scores log P(a) > log P(b), and over all probes the rate with its count, as BLiMP reports accuracy."""

from __future__ import annotations

import pytest

from orderlab.spec.extras import installed

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not installed("transformers"), reason="needs the optional extra [hf]"),
]

PAIRS = [["the dog bites", "the dog bite"], ["dogs bite man", "dogs bites man"], ["the man bites", "man the bites"]]
SPEC = {
    "name": "minimal",
    "model": {"kind": "hf", "family": "gpt2", "d_model": 16, "n_heads": 2, "n_layers": 2, "dtype": "float64"},
    "inputs": [{"sentence": "dog bites man", "permutations": "reverse"}],
    "probes": [{"pair": pair, "relation": "minimal_pair"} for pair in PAIRS],
    "metrics": ["lm_logprob", "minimal_pairs"],
    "token_logprobs": True,
}


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_each_pair_is_the_comparison_of_its_sentences_log_probabilities(family: str):
    import orderlab.api as ol

    result = ol.run({**SPEC, "model": {**SPEC["model"], "family": family}})
    totals = result.token_logprobs.groupby(["encoding", "sentence"])["logprob"].sum()
    rows = result.metrics.query("metric == 'minimal_pair_preferred'")
    assert len(rows) == 2 * len(PAIRS) and rows["verdict"].isna().all()  # a preference, not an order verdict
    seen = set()
    for row in rows.itertuples():
        good, bad = row.input, row.permuted
        assert row.value == float(totals[(row.encoding, good)] > totals[(row.encoding, bad)])
        seen.add(row.value)
    assert seen == {0.0, 1.0}  # both outcomes occur here, so neither is a constant
    summary = result.summary.set_index("subject")
    for encoding in ("seeded", "zero"):
        mine = rows[rows.encoding == encoding]["value"]
        overall = summary.loc["all 3 probes"]
        assert overall[encoding] == pytest.approx(mine.mean()) and overall["permutations"] == 3


def test_it_needs_a_causal_lm_and_probes():
    import orderlab.api as ol
    from orderlab.errors import SpecError

    encoder = {**SPEC, "model": {**SPEC["model"], "family": "bert"}, "metrics": ["minimal_pairs"]}
    encoder.pop("token_logprobs")
    cases = [
        (encoder, r"metrics: minimal_pairs needs a causal LM; bert is an encoder"),
        ({**SPEC, "probes": []}, r"probes: minimal_pairs scores probe pairs"),
        ({"name": "stack", "inputs": [{"sentence": "a b c"}], "probes": [["a b c", "c b a"]],
          "metrics": ["minimal_pairs"]}, r"metrics: minimal_pairs needs a causal LM"),
    ]  # fmt: skip
    for spec, message in cases:
        with pytest.raises(SpecError, match=message):
            ol.validate(spec)


def test_a_preference_gets_no_verdict_unless_it_is_not_finite():
    import numpy as np

    from orderlab.measure.verdicts import canonical, verdicts
    from orderlab.metrics import MINIMAL_PAIR_PREFERRED
    from orderlab.vocabulary.verdict_words import NON_FINITE

    names = np.array([MINIMAL_PAIR_PREFERRED] * 4)
    values = np.array([0.0, 1.0, np.nan, 1.0])
    judged = verdicts(names, values, np.array([1e-6, 1e-6, 1e-6, np.nan]))
    assert list(judged) == ["", "", NON_FINITE, ""]
    assert canonical(values, judged)[1] == 1.0  # a preference of 1 is never zeroed as round-off
