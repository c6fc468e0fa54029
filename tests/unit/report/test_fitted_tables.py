"""Every table orderlab prints fits the console whole at 60, 80 and 120 columns: a trained spec's task accuracy and
position probe, `properties`, `models`, `trace` (issue 31, point 5). The run summary and `encodings` are tested in
test_report.py, corpus mode in tests/unit/measure/test_corpus_mode.py."""

from __future__ import annotations

import pytest
from command_line import invoke
from terminaltext import assert_nothing_cropped, render

from orderlab.report.fitting import Column, fitted_tables, fitting_groups

WIDTHS = (60, 80, 120)
ALL_ENCODINGS = ["none", "sinusoidal", "learned", "rope", "alibi", "t5", "xpos", "cope"]

TRAINED = """\
name: trained_tour
description: A first-word task learned by a one-layer stack under every encoding, and where position is decodable
model: {d_model: 8, n_heads: 2, n_layers: 1}
encodings: [none, sinusoidal, learned, rope, alibi, t5, xpos, cope]
inputs: [{sentence: word1 word2 word3, permutations: all}]
train: {task: first_word, train_lengths: [3, 4], test_lengths: [3, 5], vocabulary: 8, steps: 2, batch: 8}
decodability: {sentences: 32, length: 4, vocabulary: 8}
metrics: [equivariance, decodability]
"""


def printed(arguments: list[str], width: int) -> str:
    result = invoke(*arguments, width=width)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def trained_outcome(tmp_path_factory):
    from orderlab.commands.run import write_experiment
    from orderlab.spec.load import load_spec

    folder = tmp_path_factory.mktemp("trained")
    (folder / "trained_tour.yaml").write_text(TRAINED)
    return write_experiment(load_spec(folder / "trained_tour.yaml"), folder / "results")


@pytest.mark.parametrize("width", WIDTHS)
def test_a_trained_specs_task_and_probe_tables_fit_whole(trained_outcome, width):
    from orderlab.report.terminal import run_tables

    text = render(run_tables(trained_outcome.view, width), width)
    assert_nothing_cropped(text, width)
    task, probe = text.split("task accuracy of the trained stacks")[1].split("position decodability")
    for name in ALL_ENCODINGS:
        assert f" {name} " in task and f" {name} " in probe, (width, name)  # every encoding, its name whole
    words = " ".join(text.split())
    assert "* = a length not trained on" in words and "bold = above chance" in words  # captions whole
    assert " chance " in task and " layer " in probe  # the key columns, repeated in every part


@pytest.mark.parametrize("width", WIDTHS)
def test_properties_fit_whole(tmp_path, width):
    text = printed(["properties", "--max-len", "16", "--d-model", "8", "--n-heads", "2", "--out", str(tmp_path)], width)
    assert_nothing_cropped(text, width)
    for name in ALL_ENCODINGS:
        assert f" {name} " in text, (width, name)
    for header in ("unique", "bounded", "ministic", "alises", "smooth", "relative-"):
        assert f" {header}" in text, (width, header)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_model_families_listing_fits_and_keeps_names_whole(width):
    from orderlab.families import FAMILIES

    text = printed(["models"], width)
    assert_nothing_cropped(text, width)
    assert text.count("position_embeddings (ablations):") == len(list(FAMILIES.values()))  # the field name never broken
    for family in FAMILIES.values():
        assert f" {family.name} " in text
        for ablation in family.ablations:
            assert f" {ablation}:" in text, (width, family.name, ablation)


@pytest.mark.parametrize("width", WIDTHS)
def test_a_trace_fits_with_every_header_and_key_whole(tmp_path, width):
    spec = tmp_path / "long.yaml"
    sentence = "the quick brown fox jumps over the lazy dog again"
    spec.write_text(f"name: long\nmodel: {{d_model: 16, n_heads: 2, n_layers: 1}}\nencodings: [sinusoidal]\n"
                    f"inputs: [{{sentence: {sentence}, permutations: swaps}}]\n")  # fmt: skip
    text = printed(["trace", str(spec), "--out", str(tmp_path / "out")], width)
    assert_nothing_cropped(text, width)
    for header in ("token vector", "+ position", "layer input x", "LayerNorm(x)", "weights @ V", "layer output"):
        assert header in text, (width, header)
    for index, word in enumerate(sentence.split()):
        assert f" {index} {word} " in text, (width, word)  # a score matrix's key column
    assert text.count("row: query, column: key") == 2 * 3  # two heads, three matrices: the caption once each


def test_a_table_too_wide_is_cut_into_parts_that_repeat_the_keys_and_keep_title_and_caption_once():
    keys = [Column("query", ["0 a", "1 b"], justify="left")]
    values = [Column(f"key {j}", [f"{j}.123456", f"{j}.654321"]) for j in range(12)]
    tables = fitted_tables("the title", "the caption", keys, values, width=60)
    assert len(tables) == 3
    assert [table.title for table in tables] == ["the title", None, None]
    assert [table.caption for table in tables] == [None, None, "the caption"]
    assert all(table.columns[0].header == "query" for table in tables)
    assert [len(table.columns) - 1 for table in tables] == [4, 4, 4]  # as even as they go
    assert_nothing_cropped(render(tables, 60), 60)


def test_a_wrapping_column_counts_no_wider_than_its_longest_word_allows():
    prose = Column("what", ["a sentence long enough to wrap over several lines of a narrow table"], wrap=True)
    assert prose.width == 16 + 3  # WRAPPED_WIDTH and the column's chrome, not the whole sentence
    word = Column("what", ["a supercalifragilistic word"], wrap=True)
    assert word.width == len("supercalifragilistic") + 3  # never narrower than a word it would have to break


def test_a_cell_is_shown_as_written_never_read_as_markup():
    tables = fitted_tables("t", None, [Column("word", ["[b]", "[unused0]"], justify="left")], [], width=60)
    text = render(tables, 60)
    assert "[b]" in text and "[unused0]" in text


def test_groups_fill_the_room_in_order_and_give_a_too_wide_column_a_table_of_its_own():
    assert fitting_groups({"a": 10, "b": 10, "c": 10}, 20) == [["a", "b"], ["c"]]
    assert fitting_groups({"a": 10, "b": 50, "c": 10}, 20) == [["a"], ["b"], ["c"]]
    assert fitting_groups({"a": 5, "b": 5, "c": 5, "d": 5}, 15) == [["a", "b"], ["c", "d"]]
