"""Corpus mode: shuffles of every line through the model adapters, per-shuffle, per-sentence and summary CSVs."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from terminaltext import assert_nothing_cropped, render
from typer.testing import CliRunner

from orderlab.cli import app
from orderlab.core import permutations as perms
from orderlab.core.corpustext import read_corpus
from orderlab.measure import corpus
from orderlab.measure.adapters import build_adapters
from orderlab.models.devices import CPU
from orderlab.plan.decisions import Decisions
from orderlab.spec.extras import installed
from orderlab.spec.load import load_spec
from orderlab.spec.model_specs import CorpusInputs

pytestmark = pytest.mark.slow

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


def test_a_corpus_run_plots_similarity_by_length_and_its_report_shows_it(written, tmp_path):
    """`run --plot` of a corpus spec stopped with 'no per-layer metrics to plot' (exit 2) after writing its results."""
    import shutil

    from orderlab.report.figures import drawings, read_results

    written = Path(shutil.copytree(written, tmp_path / "tiny"))  # the module's folder stays as the run wrote it
    (drawing,) = drawings(written, read_results(written))
    figure = drawing.figure
    figure.draw_without_rendering()
    metrics = pd.read_csv(written / "metrics.csv")
    titles = {ax.get_title(): ax for ax in figure.axes}
    assert set(titles) == {"mean-pooled sentence vectors", "[CLS] vectors"}
    for title, metric in (("mean-pooled sentence vectors", "similarity_mean"), ("[CLS] vectors", "similarity_cls")):
        lines = {line.get_label(): line for line in titles[title].get_lines()}
        assert set(lines) == {"trained", "zero"}
        for ablation, line in lines.items():
            rows = metrics[(metrics["metric"] == metric) & (metrics["encoding"] == ablation)]
            expected = rows.groupby("words")["value"].mean()
            assert line.get_ydata() == pytest.approx(expected.to_numpy())  # the mean of a length's shuffles
            assert line.get_marker() not in ("", "None")
        assert all(tick == round(tick) for tick in titles[title].get_xticks())  # whole words
    result = CliRunner().invoke(app, ["plot", str(written)])
    assert result.exit_code == 0 and (written / "figures" / "corpus_similarity.png").is_file(), result.output
    result = CliRunner().invoke(app, ["report", str(written), "--out", str(written.parent / "report.html")])
    assert result.exit_code == 0, result.output
    assert "similarity with word shuffles, by sentence length" in (written.parent / "report.html").read_text()


@pytest.mark.parametrize("width", [60, 80, 120])
def test_the_corpus_table_fits_whole_with_four_ablations(tmp_path, minilm_folder, width):
    from orderlab.commands.run import write_experiment
    from orderlab.report.terminal import run_tables

    (tmp_path / "corpus.txt").write_text(CORPUS)
    spec = SPEC.replace("[trained, zero]", "[trained, zero, shuffled, sinusoidal]")
    (tmp_path / "tiny.yaml").write_text(spec)
    outcome = write_experiment(load_spec(tmp_path / "tiny.yaml"), tmp_path / "out" / "tiny")
    tables = run_tables(outcome.view, width)
    text = render(tables, width)
    assert_nothing_cropped(text, width)
    for name in ("trained", "zero", "shuffled", "sinusoidal"):
        assert f" {name} " in text, (width, name)
    assert "sentences.csv has every sentence" in " ".join(text.split())  # the caption whole
    assert text.count(" all ") == len(tables) == (2 if width == 60 else 1)  # the length groups beside every part


def test_every_shuffle_is_a_sentence_other_than_the_line_and_the_other_shuffles(tmp_path):
    (tmp_path / "c.txt").write_text("the cat saw the dog\na a b\nno no yes\n")
    work = corpus.plan(read_corpus(tmp_path / "c.txt"), CorpusInputs(file="x", shuffles=100, seed=3))
    for line, shuffles in zip(work.lines, work.permutations, strict=True):
        shown = [tuple(perms.apply(p, line.words)) for p in shuffles]
        assert tuple(line.words) not in shown and len(set(shown)) == len(shown)  # no copy of a word swapped alone
        assert len(shown) == {"the": 59, "a": 2, "no": 2}[line.words[0]]  # 5!/2! - 1, 3!/2! - 1: every other one


# Token counts out of plan order (a long sentence before short ones), and three sentences of one count.
MIXED = """the cat sat on the mat
dog bites man
Our neighbours adopted a three-legged dog from the shelter last spring.
man bites dog
a red ball
Time flies.
"""
needs_transformers = pytest.mark.skipif(not installed("transformers"), reason="needs the optional extra: orderlab[hf]")


def seeded_corpus_adapters(tmp_path: Path, family: str):
    """A seeded zoo model's adapters over MIXED, and its plan; causal passes dense, as corpus mode runs them."""
    (tmp_path / "c.txt").write_text(MIXED)
    (tmp_path / "z.yaml").write_text(
        f"name: z\nmodel: {{kind: hf, family: {family}, d_model: 16, n_heads: 2, n_layers: 2, "
        "position_embeddings: [trained, zero]}\ninputs: {file: c.txt, shuffles: 4, seed: 3}\n"
    )
    loaded = load_spec(tmp_path / "z.yaml")
    adapters = build_adapters(loaded.spec, CPU, loaded.path, decisions=Decisions(False, compile=False))
    return adapters, corpus.plan(read_corpus(tmp_path / "c.txt"), CorpusInputs(file="c.txt", shuffles=4, seed=3))


def sentence_by_sentence(adapter, work: corpus.Plan) -> dict[str, torch.Tensor]:
    """The single-sentence path: each sentence's orders through its own bound forward, sentences in line order."""
    passes = [
        adapter.sentence(line.words).forward(torch.tensor([list(range(len(line.words))), *shuffles]))
        for line, shuffles in zip(work.lines, work.permutations, strict=True)
    ]
    return {how: torch.cat([p.pooled[how][-1].double() for p in passes]) for how in corpus.poolings(adapter)}


@needs_transformers
@pytest.mark.parametrize("family", ["bert", "gpt2", "llama", "bloom"])
def test_passes_across_sentences_give_each_sequence_its_own_sentence_pass_in_plan_order(tmp_path, family):
    adapters, work = seeded_corpus_adapters(tmp_path, family)
    for adapter in adapters:
        reported: list[tuple[int, int]] = []
        with torch.inference_mode():
            grouped = corpus.encode(adapter, work, 4, lambda *call, seen=reported: seen.append(call))  # in passes
            reference = sentence_by_sentence(adapter, work)
        assert set(grouped) == set(corpus.poolings(adapter)) and len(grouped["mean"]) == len(work.owner)
        for how in grouped:
            assert torch.equal(grouped[how], reference[how]), (adapter.label, how)  # bit for bit: no padding
        done = [count for count, _ in reported]
        assert done == sorted(done) and reported[-1] == (len(work.owner), len(work.owner))  # every sequence counted


@needs_transformers
def test_sentences_of_one_token_count_share_a_pass(tmp_path):
    adapters, work = seeded_corpus_adapters(tmp_path, "bert")
    done: list[int] = []
    with torch.inference_mode():
        corpus.encode(adapters[0], work, batch_size=64, progress=lambda count, _total: done.append(count))
    passes = [after - before for before, after in itertools.pairwise([0, *done])]  # sequences of each pass
    counts = sorted({len(line.words) for line in work.lines})  # word-level tokenizer: one token per word
    assert len(passes) == len(counts) < len(work.lines)
    three_words = sum(len(p) + 1 for line, p in zip(work.lines, work.permutations, strict=True) if len(line.words) == 3)
    assert three_words in passes  # "dog bites man", "man bites dog" and "a red ball" in one pass


@needs_transformers
def test_a_causal_zoo_model_runs_corpus_mode_with_its_mean_pooling(tmp_path):
    (tmp_path / "c.txt").write_text(MIXED)
    (tmp_path / "g.yaml").write_text(
        "name: g\nmodel: {kind: hf, family: gpt2, d_model: 16, n_heads: 2, n_layers: 2}\n"
        "inputs: {file: c.txt, shuffles: 4, seed: 3, batch_size: 8}\n"
    )
    result = CliRunner().invoke(app, ["run", str(tmp_path / "g.yaml"), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    metrics = pd.read_csv(tmp_path / "out" / "g" / "metrics.csv")
    assert set(metrics["metric"]) == {"similarity_mean"}  # no [CLS]: a causal LM's first token is BOS
    assert len(metrics) == 2 * (4 + 4 + 4 + 4 + 4 + 1)  # ablations (trained, zero) x shuffles ("Time flies.": 1)
    assert set(metrics["encoding"]) == {"seeded", "zero"}  # random weights: the ablation `trained` reads seeded
    for name in ("metrics.csv", "sentences.csv", "summary.csv"):
        assert "trained" not in (tmp_path / "out" / "g" / name).read_text(), name
    assert metrics["value"].between(-1, 1 + 1e-6).all() and metrics["value"].lt(1 - 1e-6).any()


def test_activations_of_a_corpus_spec_are_one_line(tmp_path):
    """It was an AssertionError traceback ('corpus inputs are a file, not a list of sentences')."""
    import orderlab.api as ol
    from orderlab.errors import OrderlabError

    (tmp_path / "corpus.txt").write_text(CORPUS)
    (tmp_path / "tiny.yaml").write_text(SPEC)
    with pytest.raises(
        OrderlabError, match=r"^inputs: a corpus spec's sentences are a file, .*trace\(spec, input_index"
    ):
        ol.activations(tmp_path / "tiny.yaml", ["1.output"])
