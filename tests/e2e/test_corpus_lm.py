"""Corpus mode with lm_logprob (measure/corpus_lm.py) on a seeded causal LM: each line's log P against its shuffles',
checked against sentence mode's lm_logprob over the same orders, and the summary against a hand computation over
the same scores."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from orderlab.cli import app

pytest.importorskip("transformers")
pytestmark = pytest.mark.slow

runner = CliRunner()
MODEL = """\
seed: 0
model: {kind: hf, family: gpt2, d_model: 32, n_heads: 2, n_layers: 2, position_embeddings: [trained, zero],
        dtype: float64}
"""
LINES = ["the dog bit the man", "a b c", "old men like warm soup in winter"]


@pytest.fixture(scope="module")
def corpus_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("lm")
    (root / "corpus.txt").write_text("\n".join(["# a comment", *LINES]) + "\n")
    spec = f"name: lm\n{MODEL}inputs: {{file: corpus.txt, shuffles: 3}}\nmetrics: [lm_logprob]\n"
    (root / "lm.yaml").write_text(spec)
    result = runner.invoke(app, ["run", str(root / "lm.yaml"), "--out", str(root / "out")])
    assert result.exit_code == 0, result.output
    assert "ppl" in result.output and "lm_sentences.csv" in result.output
    return root / "out" / "lm"


def test_corpus_log_p_is_sentence_modes_for_the_same_orders(corpus_run: Path, tmp_path: Path):
    metrics = pd.read_csv(corpus_run / "metrics.csv", dtype={"permutation": str})
    lines = pd.read_csv(corpus_run / "lm_sentences.csv")
    line = lines[lines["sentence_id"] == 2].iloc[0]  # "the dog bit the man"
    shuffles = metrics[(metrics["sentence_id"] == 2) & (metrics["metric"] == "logprob")]
    orders = [[int(s) for s in p.split()] for p in shuffles[shuffles["encoding"] == "seeded"]["permutation"]]
    spec = tmp_path / "one.yaml"
    # The other lines as well, with no reordering: a seeded model's word-level tokenizer holds the spec's words.
    others = "".join(f", {{sentence: {line}, permutations: identity}}" for line in LINES[1:])
    spec.write_text(f"name: one\n{MODEL}inputs: [{{sentence: {LINES[0]}, permutations: {orders}}}{others}]\n"
                    "metrics: [lm_logprob]\n")  # fmt: skip
    result = runner.invoke(app, ["run", str(spec), "--out", str(tmp_path / "out"), "-q"])
    assert result.exit_code == 0, result.output
    single = pd.read_csv(tmp_path / "out" / "one" / "metrics.csv", dtype={"permutation": str})
    for encoding in ("seeded", "zero"):
        mine = single[(single["encoding"] == encoding) & (single["input"] == LINES[0])]
        reference = mine[mine["metric"] == "logprob_reference"]["value"].iloc[0]
        original = lines[(lines["sentence_id"] == 2) & (lines["encoding"] == encoding)]["logprob_original"].iloc[0]
        assert original == pytest.approx(reference, rel=1e-6)
        by_order = mine[mine["metric"] == "logprob"].set_index("permutation")["value"]
        corpus_side = shuffles[shuffles["encoding"] == encoding].set_index("permutation")["value"]
        assert corpus_side.to_dict() == pytest.approx(by_order.loc[corpus_side.index].to_dict(), rel=1e-6)
    assert line["shuffles"] == 3 and line["words"] == 5


def test_lines_and_summary_are_the_hand_computation_over_the_same_scores(corpus_run: Path):
    metrics = pd.read_csv(corpus_run / "metrics.csv")
    lines = pd.read_csv(corpus_run / "lm_sentences.csv")
    summary = pd.read_csv(corpus_run / "lm_summary.csv").set_index(["encoding", "length"])
    scores = metrics[metrics["metric"] == "logprob"]
    for _, line in lines.iterrows():
        mine = scores[(scores["sentence_id"] == line["sentence_id"]) & (scores["encoding"] == line["encoding"])]
        shuffled = mine["value"].to_numpy()
        assert line["original_preferred"] == int(all(shuffled <= line["logprob_original"] * (1 + 1e-7)))
        # the tie rule: the margin over the best shuffle within 16 x the original's round-off against its twin
        # (at least 16 x eps x |log P|); a float64 run's twin is float32, the difference scaled by eps64 / eps32
        line_width = max(16 * line["logprob_round_off"], 16 * 2.0**-52 * abs(line["logprob_original"]))
        assert line["tie"] == int(abs(line["logprob_original"] - shuffled.max()) <= line_width)
        assert 0 <= line["logprob_round_off"] < 1e-6
        change = sum(shuffled - line["logprob_original"]) / len(shuffled) / line["tokens"]
        # from values written with 7 digits: a difference of two log Ps keeps about 5 of them
        assert line["logprob_change_per_token"] == pytest.approx(change, rel=1e-4, abs=1e-5)
    for encoding, mine in lines.groupby("encoding"):
        row = summary.loc[(encoding, "all")]
        assert row["sentences"] == len(LINES)
        decided = mine[mine["tie"] == 0]
        assert row["original_preferred"] == decided["original_preferred"].sum() and row["ties"] == mine["tie"].sum()
        assert row["original_preferred_rate"] == pytest.approx(decided["original_preferred"].mean())
        ppl = math.exp(-mine["logprob_original"].sum() / mine["tokens"].sum())
        assert row["perplexity_original"] == pytest.approx(ppl, rel=1e-6)
        all_shuffles = scores[scores["encoding"] == encoding]["value"].sum()
        tokens = (mine["tokens"] * mine["shuffles"]).sum()
        assert row["perplexity_shuffled"] == pytest.approx(math.exp(-all_shuffles / tokens), rel=1e-5)


def test_corpus_mode_refuses_lm_logprob_on_an_encoder_and_metrics_it_does_not_measure(tmp_path: Path):
    (tmp_path / "corpus.txt").write_text("the dog bit the man\n")
    spec = tmp_path / "bad.yaml"
    spec.write_text("name: bad\nmodel: {kind: hf, family: bert, d_model: 32, n_heads: 2, n_layers: 1}\n"
                    "inputs: {file: corpus.txt}\nmetrics: [lm_logprob, equivariance]\n")  # fmt: skip
    result = runner.invoke(app, ["validate", str(spec)])
    assert result.exit_code == 2
    assert "equivariance: corpus mode measures" in result.output
    assert "lm_logprob needs a causal LM; bert is an encoder" in result.output
