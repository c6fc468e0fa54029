"""`orderlab trace` on models of the zoo: the hook points their family exposes (layer input, attention probabilities,
layer output), on the model's own token slots, read from the adapter's pass and equal to transformers' own."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import torch
from typer.testing import CliRunner

from orderlab.cli import app
from orderlab.families import FAMILIES
from orderlab.models.hf.loader import PretrainedBackend, Seeded
from orderlab.spec.extras import installed

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not installed("transformers"), reason="needs the optional extra: orderlab[hf]"),
]
ZOO_CAUSAL = Path(__file__).resolve().parents[3] / "experiments" / "zoo_causal.yaml"
WORDS = "the dog bit the man".split()


def traced(tmp_path: Path, *args: str) -> pd.DataFrame:
    result = CliRunner().invoke(app, ["trace", str(ZOO_CAUSAL), "--out", str(tmp_path), *args])
    assert result.exit_code == 0, result.output
    assert "the spec sweeps family; tracing family=gpt2" in result.output and "softmax weights" in result.output
    (path,) = (tmp_path / "zoo_causal_trace").glob("*.csv")
    return pd.read_csv(path)


def grid(frame: pd.DataFrame, quantity: str) -> torch.Tensor:
    """(heads, slots, index) of a traced quantity; whole-vector quantities have one 'head'."""
    rows = frame[frame["quantity"] == quantity]
    heads = rows["head"].fillna(0).astype(int)
    out = torch.zeros(heads.max() + 1, rows["slot"].max() + 1, rows["index"].max() + 1, dtype=torch.float64)
    out[tuple(torch.tensor(c.tolist()) for c in (heads, rows["slot"], rows["index"]))] = torch.tensor(
        rows["value"].tolist(), dtype=torch.float64
    )
    return out


def test_trace_runs_on_zoo_causal_and_holds_transformers_own_numbers(tmp_path):
    """zoo_causal's first combination (gpt2, seeded weights, 4 heads, 4 layers) at layer 2."""
    frame = traced(tmp_path, "--layer", "2")
    exposed = {"input", "q", "k", "v", "weights", "attention_output", "layer_output"}  # what the family exposes
    assert set(frame["quantity"]) == exposed
    assert set(frame["encoding"]) == {"seeded"} and set(frame["layer"]) == {2}
    slots = frame.drop_duplicates("slot").sort_values("slot")["word"].tolist()
    assert slots == ["<|endoftext|>", *WORDS]  # GPT-2's own BOS, then one token per word
    backend = PretrainedBackend(Seeded(64, 4, 4, tuple(sorted(set(WORDS))), 0), "float32", family="gpt2",
                                attention=True)  # fmt: skip
    ids = torch.tensor([backend.word_tokens(WORDS).ids])
    with torch.inference_mode():
        theirs = backend.model(input_ids=ids, output_attentions=True, output_hidden_states=True)
    weights = grid(frame, "weights")
    assert weights.shape == (4, 6, 6)
    torch.testing.assert_close(weights, theirs.attentions[1][0].double(), rtol=1e-6, atol=1e-7)  # 7 digits in CSV
    torch.testing.assert_close(grid(frame, "input")[0], theirs.hidden_states[1][0].double(), rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(grid(frame, "layer_output")[0], theirs.hidden_states[2][0].double(), rtol=1e-6,
                               atol=1e-6)  # fmt: skip


def test_trace_picks_a_zoo_ablation_by_name_and_refuses_a_layer_the_model_lacks(tmp_path):
    frame = traced(tmp_path, "--encoding", "zero")
    assert set(frame["encoding"]) == {"zero"}
    result = CliRunner().invoke(app, ["trace", str(ZOO_CAUSAL), "--out", str(tmp_path), "--layer", "5"])
    assert result.exit_code == 2 and "--layer 5: the model has 4 layer(s); expected 1..4" in result.output
    result = CliRunner().invoke(app, ["trace", str(ZOO_CAUSAL), "--out", str(tmp_path), "--encoding", "rope"])
    assert (
        result.exit_code == 2 and "--encoding 'rope' is not in the spec; expected one of seeded, zero" in result.output
    )


def test_trace_of_the_packaged_minilm_shows_its_wordpiece_tokens(write_spec, tmp_path, minilm_folder):
    spec = write_spec("name: mini\nmodel: {kind: pretrained, name: minilm}\ninputs: [{sentence: dog bites man}]\n")
    result = CliRunner().invoke(app, ["trace", str(spec), "--out", str(tmp_path), "--layer", "6"])
    assert result.exit_code == 0, result.output
    frame = pd.read_csv(tmp_path / "mini_trace" / "input0-layer6-trained.csv")
    assert frame.drop_duplicates("slot")["word"].tolist() == ["[CLS]", "dog", "bites", "man", "[SEP]"]
    sums = frame[frame["quantity"] == "weights"].groupby(["head", "slot"])["value"].sum()
    assert len(sums) == 12 * 5 and ((sums - 1).abs() < 1e-5).all()  # 12 heads, each row a distribution


def test_models_names_each_family_s_hook_points():
    result = CliRunner().invoke(app, ["models"], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    assert "hook points per layer" in result.output
    assert result.output.count("input, q, k, v, pattern, attn_out") == len(FAMILIES.names())  # one row per family
    assert result.output.count("attn_out, mlp_out, output") == 1  # GPT-NeoX's parallel residual: no mid


@pytest.mark.parametrize(("family", "start"), [("gpt2", "<|endoftext|>"), ("llama", "<s>"), ("bloom", "<s>")])
def test_trace_family_picks_the_sweeps_family_and_names_its_own_start_token(tmp_path, family, start):
    result = CliRunner().invoke(app, ["trace", str(ZOO_CAUSAL), "--out", str(tmp_path), "--family", family])
    assert result.exit_code == 0, result.output
    assert f"tracing family={family}" in result.output
    (path,) = (tmp_path / "zoo_causal_trace").glob(f"*family_{family}*.csv")
    slots = pd.read_csv(path).drop_duplicates("slot").sort_values("slot")["word"].tolist()
    assert slots == [start, *WORDS]  # the family's own BOS, never BERT's [CLS]


def test_trace_family_not_in_the_spec_is_one_line():
    result = CliRunner().invoke(app, ["trace", str(ZOO_CAUSAL), "--family", "bert"])
    assert result.exit_code == 2
    assert result.output == "error: --family 'bert' is not a family of the spec; expected one of gpt2, llama, bloom\n"


def test_a_corpus_spec_traces_the_sentence_input_picks(tmp_path: Path):
    """It was an AssertionError traceback ('corpus inputs are a file, not a list of sentences')."""
    from minilm import needs_minilm

    needs_minilm()
    (tmp_path / "corpus.txt").write_text("# a comment\ndog bites man\nThe cat sat down.\n")
    spec = tmp_path / "corpus.yaml"
    spec.write_text("name: corpus\nmodel: {kind: pretrained, name: minilm}\ninputs: {file: corpus.txt, shuffles: 2}\n")
    result = CliRunner().invoke(app, ["trace", str(spec), "--input", "1", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    (path,) = (tmp_path / "corpus_trace").glob("*.csv")
    words = pd.read_csv(path).drop_duplicates("slot")["word"].tolist()
    assert words[0] == "[CLS]" and "cat" in words and "dog" not in words  # the corpus's second sentence
    result = CliRunner().invoke(app, ["trace", str(spec), "--input", "2", "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert result.output == "error: --input 2: the spec has 2 corpus sentence(s); expected 0..1\n"
