"""token_logprobs: true writes token_logprobs.csv: each token's log-probability given the ones before it, the terms
whose sum is the lm_logprob metrics' log P(X); opt-in, and refused where no causal LM scores tokens."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from orderlab.spec.extras import installed

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not installed("transformers"), reason="needs the optional extra [hf]"),
]

SPEC = {
    "name": "tokens",
    "model": {"kind": "hf", "family": "gpt2", "d_model": 16, "n_heads": 2, "n_layers": 2, "dtype": "float64"},
    "inputs": [{"sentence": "dog bites man", "permutations": "all"}],
    "probes": [["dog bites man", "man bites dog"]],
    "metrics": ["lm_logprob"],
    "token_logprobs": True,
}


def test_each_token_is_scored_as_transformers_scores_it(tmp_path: Path):
    import torch

    import orderlab.api as ol
    from orderlab.models.hf.loader import PretrainedBackend, Seeded

    result = ol.run(SPEC, out=tmp_path)
    assert (tmp_path / "tokens" / "token_logprobs.csv").is_file()
    rows = ol.load(tmp_path / "tokens").token_logprobs
    assert rows is not None and list(rows.columns) == ["encoding", "sentence", "token_index", "token", "word_index",
                                                       "logprob"]  # fmt: skip
    backend = PretrainedBackend(Seeded(16, 2, 2, ("bites", "dog", "man"), 0), "float64", family="gpt2")
    for sentence in ("dog bites man", "man bites dog"):
        ids = torch.tensor([backend.word_tokens(sentence.split()).ids])
        with torch.no_grad():
            logits = backend.model(input_ids=ids).logits
        expected = torch.log_softmax(logits[0, :-1], dim=-1).gather(-1, ids[0, 1:, None])[:, 0].tolist()
        mine = rows[(rows.encoding == "seeded") & (rows.sentence == sentence)]
        assert mine["token"].tolist() == sentence.split() and mine["word_index"].tolist() == [0, 1, 2]
        assert mine["logprob"].tolist() == pytest.approx(expected, abs=1e-6)  # the CSVs' fixed float format
    assert set(result.token_logprobs.encoding) == {"seeded", "zero"}


def test_the_tokens_sum_to_the_log_probability_the_metrics_compare():
    import orderlab.api as ol

    result = ol.run(SPEC)
    rows = result.token_logprobs
    for encoding in ("seeded", "zero"):
        total = rows[rows.encoding == encoding].groupby("sentence")["logprob"].sum()
        change = abs(total["man bites dog"] - total["dog bites man"]) / abs(total["dog bites man"])
        metric = result.metrics.query("encoding == @encoding and metric == 'logprob_change' and permutation == '2 1 0'")
        assert math.isclose(float(metric["value"].iloc[0]), change, abs_tol=1e-6)  # both as the CSVs write them


def test_it_is_opt_in_and_refused_without_a_causal_lm():
    import orderlab.api as ol
    from orderlab.errors import SpecError

    assert ol.run({**SPEC, "token_logprobs": False}).token_logprobs is None
    with pytest.raises(SpecError, match=r"token_logprobs: .*expected lm_logprob among metrics"):
        ol.validate({**SPEC, "metrics": ["equivariance"]})
    with pytest.raises(SpecError, match=r"metrics|token_logprobs"):
        ol.validate({"name": "stack", "inputs": [{"sentence": "a b c"}], "token_logprobs": True})


@pytest.mark.parametrize("count", [2, 3])
def test_shards_merged_write_the_whole_runs_token_logprobs_byte_for_byte(tmp_path: Path, count: int):
    """Each combination's token rows come from the one shard that opens it (plan/shards.opened_combinations); two
    seeds make two combinations, and three shards leave one holding none of the openings."""
    import yaml
    from sharding import assert_same_files, merged, run_shards, run_whole
    from typer.testing import CliRunner

    path = tmp_path / "tokens.yaml"
    path.write_text(yaml.safe_dump({**SPEC, "seed": [0, 1]}))
    cli = CliRunner()
    whole = run_whole(cli, path, tmp_path / "whole")
    assert_same_files(merged(cli, run_shards(cli, path, count, tmp_path / "shards"), tmp_path / "merged"), whole)
    tokens = (whole / "token_logprobs.csv").read_text()
    assert tokens.count("\n0,") > 0 and tokens.count("\n1,") > 0  # both seeds' rows, each once
