"""Corpus mode: shuffles of every line through the model adapters, per-shuffle, per-sentence and summary CSVs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from typer.testing import CliRunner

from orderlab.backends import corpus
from orderlab.backends.corpustext import read_corpus
from orderlab.backends.specs import CorpusInputs
from orderlab.cli import app
from orderlab.devices import CPU
from orderlab.load import load_spec
from orderlab.models import build_adapters

CORPUS = """# tiny corpus
dog bites man
The teacher praised the student.

Our neighbours adopted a three-legged dog from the shelter last spring.
Time flies.
"""

SPEC = """
name: tiny
model: {kind: pretrained, name: minilm, position_embeddings: [trained, zero]}
inputs: {file: corpus.txt, shuffles: 3, seed: 1, batch_size: 4, threshold: 0.95}
"""


@pytest.fixture(scope="module")
def written(tmp_path_factory, minilm_folder) -> Path:
    folder = tmp_path_factory.mktemp("corpus")
    (folder / "corpus.txt").write_text(CORPUS)
    (folder / "tiny.yaml").write_text(SPEC)
    result = CliRunner().invoke(app, ["run", str(folder / "tiny.yaml"), "--out", str(folder / "out")])
    assert result.exit_code == 0, result.output
    assert "trained" in result.output and "zero" in result.output  # the summary table
    return folder / "out" / "tiny"


def test_corpus_mode_writes_per_shuffle_per_sentence_and_summary_csvs(written):
    assert sorted(p.name for p in written.iterdir()) == ["manifest.json", "metrics.csv", "sentences.csv", "summary.csv"]
    sentences = pd.read_csv(written / "sentences.csv")
    assert set(sentences["sentence_id"]) == {2, 3, 5, 6}  # line numbers; comment and blank lines skipped
    assert sentences.loc[sentences["sentence"] == "Time flies.", "shuffles"].tolist() == [1, 1]  # 2! - 1
    summary = pd.read_csv(written / "summary.csv")
    assert {"all", "2-4", "5-8", "9-12"} <= set(summary["length"])
    metrics = pd.read_csv(written / "metrics.csv")
    assert len(metrics) == 2 * 2 * (3 + 3 + 3 + 1)  # ablations x poolings x shuffles


def test_zeroed_positions_give_every_shuffle_similarity_one(written):
    metrics = pd.read_csv(written / "metrics.csv")
    zero = metrics[metrics["encoding"] == "zero"]["value"]
    assert np.allclose(zero, 1.0, atol=1e-5)
    trained = metrics[(metrics["encoding"] == "trained") & (metrics["metric"] == "similarity_mean")]["value"]
    assert trained.max() < 0.999


def test_share_above_threshold_counts_shuffles(written):
    metrics = pd.read_csv(written / "metrics.csv")
    trained = metrics[(metrics["encoding"] == "trained") & (metrics["metric"] == "similarity_mean")]
    summary = pd.read_csv(written / "summary.csv").set_index(["encoding", "length"])
    assert summary.loc[("trained", "all"), "share_above"] == pytest.approx((trained["value"] > 0.95).mean())
    assert summary.loc[("trained", "all"), "shuffles"] == len(trained)


def test_batch_size_does_not_change_pooled_vectors(tmp_path, minilm_folder):
    (tmp_path / "c.txt").write_text(CORPUS)
    (tmp_path / "tiny.yaml").write_text(SPEC.replace("corpus.txt", "c.txt"))
    loaded = load_spec(tmp_path / "tiny.yaml")
    trained = build_adapters(loaded.spec, CPU, loaded.path)[0]
    work = corpus.plan(read_corpus(tmp_path / "c.txt"), CorpusInputs(file="c.txt", shuffles=2))
    with torch.inference_mode():
        one_by_one = corpus.encode(trained, work, batch_size=1)
        together = corpus.encode(trained, work, batch_size=64)
    assert set(one_by_one) == set(corpus.POOLINGS)
    for how in corpus.POOLINGS:
        torch.testing.assert_close(one_by_one[how], together[how], atol=1e-5, rtol=1e-4)


def test_shuffles_of_a_sentence_do_not_depend_on_the_rest_of_the_corpus(tmp_path):
    (tmp_path / "a.txt").write_text("the cat sat on the mat\nthe dog ran\n")
    (tmp_path / "b.txt").write_text("the cat sat on the mat\n")
    inputs = CorpusInputs(file="x", shuffles=4)
    a = corpus.plan(read_corpus(tmp_path / "a.txt"), inputs)
    b = corpus.plan(read_corpus(tmp_path / "b.txt"), inputs)
    assert a.permutations[0] == b.permutations[0]
