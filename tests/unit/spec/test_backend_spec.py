"""Spec rules of pretrained models and corpus inputs; stack specs without `kind` keep working."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from minilm import needs_minilm

from orderlab.cli import app
from orderlab.errors import SpecError
from orderlab.spec.load import load_spec
from orderlab.spec.model_specs import HFModelSpec, PretrainedModelSpec
from orderlab.spec.schema import ModelSpec

STACK = "model: {d_model: 8, n_heads: 2}\ninputs: [{sentence: dog bites man}]\n"


def test_a_model_without_kind_is_the_attention_stack(write_spec):
    spec = load_spec(write_spec(STACK)).spec
    assert isinstance(spec.model, ModelSpec) and spec.model.kind == "stack" and spec.model.d_model == 8


def test_pretrained_and_hf_kinds_select_their_models(write_spec, tmp_path):
    pretrained = load_spec(write_spec("model: {kind: pretrained, name: minilm, position_embeddings: zero}\n"
                                      "inputs: [{sentence: dog bites man}]\n")).spec  # fmt: skip
    assert isinstance(pretrained.model, PretrainedModelSpec)
    assert pretrained.model.position_embeddings == ["zero"]
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text('{"model_type": "bert"}')
    hf = load_spec(write_spec("model: {kind: hf, path: m}\ninputs: [{sentence: a b}]\n")).spec
    assert isinstance(hf.model, HFModelSpec)


def test_unknown_model_kind_suggests_the_close_one(write_spec):
    with pytest.raises(
        SpecError, match=r"spec.yaml:1: model: unknown model kind 'pretrianed'. Did you mean: pretrained\?"
    ):
        load_spec(write_spec("model: {kind: pretrianed, name: minilm}\ninputs: [{sentence: a b}]\n"))


def test_unknown_ablation_is_one_line_with_the_choices(write_spec):
    with pytest.raises(SpecError, match=r"model.position_embeddings\[0\]: got 'zeroed'; expected 'trained', 'zero'"):
        load_spec(write_spec("model: {kind: pretrained, name: minilm, position_embeddings: [zeroed]}\n"
                             "inputs: [{sentence: a b}]\n"))  # fmt: skip


def test_encodings_are_refused_for_a_pretrained_model(write_spec):
    with pytest.raises(SpecError, match=r"spec.yaml:2: encodings: .*expected model.position_embeddings"):
        load_spec(write_spec("model: {kind: pretrained, name: minilm}\nencodings: [rope]\ninputs: [{sentence: a b}]\n"))


def test_corpus_inputs_need_a_pretrained_model(write_spec, tmp_path):
    (tmp_path / "c.txt").write_text("dog bites man\n")
    with pytest.raises(SpecError, match=r"inputs.file: corpus inputs need a pretrained model"):
        load_spec(write_spec("inputs: {file: c.txt}\n"))


def test_corpus_line_with_one_word_is_reported_by_line(write_spec, tmp_path):
    (tmp_path / "c.txt").write_text("# comment\ndog bites man\n\nHello\n")
    with pytest.raises(SpecError, match=r"c.txt:4: 'Hello' has one word; expected at least two"):
        load_spec(write_spec("model: {kind: pretrained, name: minilm}\ninputs: {file: c.txt}\n"))


def test_corpus_line_of_one_word_repeated_is_reported_by_line(write_spec, tmp_path):
    (tmp_path / "c.txt").write_text("dog bites man\nno no no\n")
    with pytest.raises(SpecError, match=r"c.txt:2: 'no no no' is one word repeated; expected two different words"):
        load_spec(write_spec("model: {kind: pretrained, name: minilm}\ninputs: {file: c.txt}\n"))


def test_corpus_key_typo_is_named(write_spec):
    with pytest.raises(SpecError, match=r"inputs.shufles: unknown key 'shufles'. Did you mean: shuffles\?"):
        load_spec(write_spec("model: {kind: pretrained, name: minilm}\ninputs: {file: c.txt, shufles: 3}\n"))


def test_missing_corpus_file_is_named(write_spec):
    with pytest.raises(SpecError, match=r"inputs.file: .*nope.txt: corpus file not found"):
        load_spec(write_spec("model: {kind: pretrained, name: minilm}\ninputs: {file: nope.txt}\n"))


def test_hf_folder_without_config_is_refused(write_spec):
    with pytest.raises(SpecError, match=r"model.path: .* has no config.json"):
        load_spec(write_spec("model: {kind: hf, path: missing}\ninputs: [{sentence: a b}]\n"))


def test_plot_refuses_corpus_results_it_cannot_read_in_one_line(tmp_path, cli):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "metrics.csv").write_text("sentence_id,words,encoding,shuffle,permutation,metric,value\n")
    (corpus / "manifest.json").write_text("{}")
    plotted = cli.invoke(app, ["plot", str(corpus)])
    assert plotted.exit_code == 2 and "manifest.json: no `spec` or `dtype`" in plotted.output
    (corpus / "manifest.json").write_text(
        json.dumps({"spec": {"name": "c", "path": "c.yaml", "sha256": "0" * 64}, "dtype": "float32"})
    )
    plotted = cli.invoke(app, ["plot", str(corpus)])
    assert plotted.exit_code == 2 and "metrics.csv: no similarity_mean or similarity_cls rows" in plotted.output
    assert plotted.output.count("\n") == 1


# A model of the zoo with five problems in five places: each is one line of one listing, and the exit code is 2.
MANY_PROBLEMS = """\
name: many
model: {kind: hf, family: bloom, d_model: 10, n_heads: 4, n_layers: 1,
        position_embeddings: [trained, sinusoidal]}
encodings: [rope]
inputs: [{sentence: dog bites man, permutations: [[0, 0, 1]]}]
metrics: [minimal_pairs]
"""


def test_every_problem_of_a_zoo_spec_in_one_listing(cli, write_spec):
    path = write_spec(MANY_PROBLEMS)
    result = cli.invoke(app, ["validate", str(path)])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    expected = [
        ":4: encodings: encodings apply to the synthetic attention stack",
        ":2: model.d_model: 10 does not split into n_heads=4 heads for bloom",
        ":3: model.position_embeddings[1]: bloom has no 'sinusoidal' ablation",
        ":1: probes: minimal_pairs scores probe pairs",  # a field the spec lacks: its first line
        ":5: inputs[0].permutations:",
    ]
    assert len(lines) == len(expected), result.output
    for fragment in expected:
        assert sum(line.startswith(f"error: {path}{fragment}") for line in lines) == 1, (fragment, result.output)
    assert "Traceback" not in result.output


def test_what_corpus_mode_would_ignore_is_refused_all_at_once(cli, write_spec, tmp_path):
    """metrics, probes, attention_maps and decodability of a corpus spec were accepted and silently not measured."""
    (tmp_path / "c.txt").write_text("dog bites man\nthe cat sat\n")
    spec = write_spec(
        "name: c\nmodel: {kind: pretrained, name: minilm}\ninputs: {file: c.txt}\nmetrics: [invariance, attention]\n"
        "probes: [[dog bites man, man bites dog]]\nattention_maps: {input: 0}\ndecodability: {sentences: 8}\n"
    )
    result = cli.invoke(app, ["validate", str(spec)])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert [line.split(": ")[2] for line in lines] == ["metrics", "probes", "attention_maps", "decodability"]
    assert lines[0].endswith("expected metrics: [invariance], [lm_logprob], both, or none") and "attention:" in lines[0]
    shipped = Path(__file__).resolve().parents[3] / "experiments" / "minilm_corpus.yaml"  # metrics: [invariance]
    assert cli.invoke(app, ["validate", str(shipped)]).exit_code == 0


FITTED = ("model: {{kind: pretrained, name: minilm, head: classification{head}}}\n"
          "inputs: {{dataset: test.jsonl, text: text, label: label}}\n")  # fmt: skip
TRAIN_HEAD = ", train_head: {dataset: train.jsonl, labels: [negative, positive]}"


@pytest.mark.parametrize(
    ("head", "train", "test", "fragments"),
    [
        ("", '{"text": "a b", "label": "positive"}\n', '{"text": "a b", "label": "positive"}\n',
         ["spec.yaml:1: model", "expected head: classification with train_head: {dataset, labels}"]),
        (", train_head: {dataset: train.jsonl, labels: [positive, positive]}", "", "",
         ["labels", "a name given twice"]),
        (TRAIN_HEAD, '{"text": "a b", "label": "positive"}\n{"text": "c d", "label": "meh"}\n',
         '{"text": "a b", "label": "positive"}\n', ["train.jsonl:2: label 'meh'", "negative, positive"]),
        (TRAIN_HEAD, '{"text": "a b", "label": null}\n', '{"text": "a b", "label": "positive"}\n',
         ["train.jsonl:1: label: got NoneType", "expected a label name or id"]),
        (TRAIN_HEAD, '{"text": "a b", "label": "positive"}\n', '{"text": "a b", "label": "meh"}\n',
         ["test.jsonl:1: label 'meh'"]),
    ],
)  # fmt: skip
def test_a_head_orderlab_fits_is_refused_in_one_line_before_any_work(cli, write_spec, tmp_path, head, train, test,
                                                                      fragments):  # fmt: skip
    """A packaged encoder's head is fitted: without train_head it would be random; every label of both files must be
    one of train_head.labels, and every example it is fitted on labelled (file:line)."""
    needs_minilm()
    (tmp_path / "train.jsonl").write_text(train)
    (tmp_path / "test.jsonl").write_text(test)
    result = cli.invoke(app, ["validate", str(write_spec(FITTED.format(head=head)))])
    assert result.exit_code == 2 and result.output.startswith("error: "), result.output
    for fragment in fragments:
        assert fragment in result.output, result.output


def test_train_head_belongs_to_a_classification_head(write_spec):
    with pytest.raises(SpecError, match="expected head: classification with train_head"):
        load_spec(write_spec("model: {kind: pretrained, name: minilm, train_head: {dataset: t.jsonl, labels: [a, b]}}\n"
                             "inputs: [{sentence: a b}]\n"))  # fmt: skip


def test_a_head_is_fitted_on_labelled_examples_only(cli, write_spec, tmp_path):
    """Inputs without a label column: the file the head is fitted on is read with the same columns, so it has none."""
    needs_minilm()
    (tmp_path / "train.jsonl").write_text('{"text": "a b", "label": "positive"}\n')
    (tmp_path / "test.jsonl").write_text('{"text": "a b"}\n')
    spec = FITTED.format(head=TRAIN_HEAD).replace("label: label", "label: null")
    result = cli.invoke(app, ["validate", str(write_spec(spec))])
    assert result.exit_code == 2 and "train.jsonl:1: no label; expected every example a head is fitted on labelled" in (
        result.output
    ), result.output


def test_an_unknown_key_inside_a_models_nested_block_lists_that_blocks_keys(write_spec):
    """The block's model is picked by its parent's `kind` (a pretrained model's train_head), not by its own keys."""
    spec = (
        "model: {kind: pretrained, name: minilm, head: classification, train_head: {name: x}}\ninputs: {file: c.txt}\n"
    )
    with pytest.raises(SpecError, match=r"model.train_head.name: unknown key 'name'. Expected one of: dataset, epochs"):
        load_spec(write_spec(spec))
