"""Zoo attention maps: `attention` on a model of the zoo writes attention.csv between words, from the model's own
attention probabilities (transformers' output_attentions), and plot draws them as it does the stack's."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import torch
from typer.testing import CliRunner

from orderlab.cli import app
from orderlab.errors import OrderlabError
from orderlab.models.hf.loader import PretrainedBackend, Seeded
from orderlab.spec.extras import installed

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not installed("transformers"), reason="needs the optional extra: orderlab[hf]"),
]
SENTENCE = "the dog bit the man"
KEYS = ["family", "encoding", "reordering", "layer", "head", "query"]


@pytest.fixture(scope="module")
def zoo_run(tmp_path_factory):
    """A gpt2 (BOS first) and a bert ([CLS] ... [SEP]) run once with attention maps, and plotted."""
    folder = tmp_path_factory.mktemp("zoo")
    spec = folder / "zoo_maps.yaml"
    spec.write_text(
        "name: zoo_maps\nseed: 0\n"
        "model: {kind: hf, family: [gpt2, bert], d_model: 16, n_heads: 2, n_layers: 2, dtype: float64}\n"
        f"inputs: [{{sentence: {SENTENCE}, permutations: {{random: 4}}}}]\n"
        "metrics: [attention]\n"
    )
    result = CliRunner().invoke(app, ["run", str(spec), "--out", str(folder / "out"), "--quiet", "--plot"])
    assert result.exit_code == 0, result.output
    return folder / "out" / "zoo_maps"


def test_attention_csv_holds_one_word_map_per_head_each_row_a_distribution(zoo_run):
    maps = pd.read_csv(zoo_run / "attention.csv")
    n = len(SENTENCE.split())
    assert list(maps.columns) == ["family", "encoding", "reordering", "layer", "head", "query", "key", "value"]
    assert set(maps["family"]) == {"gpt2", "bert"} and set(maps["encoding"]) == {"seeded", "zero"}
    assert set(maps["reordering"]) == {0, 1} and set(maps["layer"]) == {1, 2} and set(maps["head"]) == {0, 1}
    assert len(maps) == 2 * 2 * 2 * 2 * 2 * n * n  # families, ablations, reorderings, layers, heads, n x n words
    assert set(maps["query"]) == set(maps["key"]) == set(range(n))
    sums = maps.groupby(KEYS)["value"].sum()
    assert ((sums - 1).abs() < 1e-6).all()  # attention.csv keeps 7 significant digits
    causal = maps[maps["family"] == "gpt2"]
    assert (causal[causal["key"] > causal["query"]]["value"] == 0).all()  # no word sees a later one


def test_the_figures_and_the_manifest_name_the_zoo_maps(zoo_run):
    manifest = json.loads((zoo_run / "manifest.json").read_text())
    assert manifest["attention"]["words"] == SENTENCE
    figures = sorted(path.name for path in (zoo_run / "figures").glob("attention_*.png"))
    assert len(figures) == 2 * 2 * 2  # families, ablations, layers
    assert "attention_family-gpt2_seeded_layer2.png" in figures


@pytest.mark.parametrize("family", ["gpt2", "bert"])
def test_the_maps_are_transformers_own_output_attentions_between_the_words(zoo_run, family):
    """The seeded model rebuilt as the run built it, asked by transformers itself for its attention of the input
    as written and of the shown reordering; the words' slots (one token each here) cut out, each row renormalised
    over the words (BOS, [CLS], [SEP] are no words)."""
    manifest = json.loads((zoo_run / "manifest.json").read_text())
    permuted = manifest["attention"]["reorderings"][0]["permuted"].split()
    words = SENTENCE.split()
    backend = PretrainedBackend(Seeded(16, 2, 2, tuple(sorted(set(words))), 0), "float64", family=family,
                                attention=True)  # fmt: skip
    maps = pd.read_csv(zoo_run / "attention.csv")
    maps = maps[(maps["family"] == family) & (maps["encoding"] == "seeded")]
    for reordering, sentence in enumerate([words, permuted]):
        tokens = backend.word_tokens(sentence)
        with torch.inference_mode():
            theirs = backend.model(input_ids=torch.tensor([tokens.ids]), output_attentions=True).attentions
        slots = [start for start, _ in tokens.spans]
        for layer, grid in enumerate(theirs, start=1):
            words_only = grid[0][:, slots][:, :, slots]  # (h, n, n)
            expected = words_only / words_only.sum(dim=-1, keepdim=True)
            rows = maps[(maps["reordering"] == reordering) & (maps["layer"] == layer)]
            ours = torch.zeros_like(expected)
            index = [torch.tensor(rows[column].tolist()) for column in ("head", "query", "key")]
            ours[tuple(index)] = torch.tensor(rows["value"].tolist(), dtype=torch.float64)
            torch.testing.assert_close(ours, expected, rtol=1e-6, atol=1e-7)  # the CSV's 7 significant digits


def test_a_word_of_several_tokens_is_one_row_and_one_column(minilm_folder):
    """MiniLM's WordPiece splits a word: its query row is the mean of its sub-tokens' rows, its key column the sum
    of theirs, then each row is renormalised over the words."""
    from orderlab.measure.chunking import device_batching
    from orderlab.models.pretrained import PretrainedAdapter, PretrainedSentence, Shared

    backend = PretrainedBackend(minilm_folder, "float64", attention=True)
    adapter = PretrainedAdapter(Shared(backend, 0, device_batching(backend.device)), "trained")
    sentence = PretrainedSentence(adapter, ["the", "tokenization", "dog"])
    moved = sentence.tokens.permuted((1, 2, 0))  # "tokenization dog the"
    spans = moved.spans
    assert spans[0][1] - spans[0][0] > 1  # "tokenization" is several tokens
    with torch.inference_mode():
        theirs = backend.model(input_ids=torch.tensor([moved.ids]), output_attentions=True).attentions
    ours = sentence.word_maps([a[0] for a in theirs], (1, 2, 0))
    grid = theirs[0][0].double()  # (h, T, T)
    expected = torch.stack([torch.stack([grid[:, slice(*q), slice(*k)].sum(-1).mean(-1) for k in spans], -1)
                            for q in spans], -2)  # fmt: skip
    torch.testing.assert_close(ours[0], expected / expected.sum(-1, keepdim=True))
    assert ours[0].shape == (grid.shape[0], 3, 3)


def test_a_pass_that_returns_no_probabilities_is_refused_in_one_line():
    """SDPA forms no attention probabilities: asking it for maps is refused rather than measured as absent."""
    backend = PretrainedBackend(Seeded(16, 2, 2, ("dog", "man"), 0), family="bert", attention=False)  # sdpa
    with pytest.raises(OrderlabError, match=r"bert: its 'sdpa' attention returns no attention probabilities"):
        backend.forward(torch.tensor([backend.word_tokens(["dog", "man"]).ids]), attention=True)
