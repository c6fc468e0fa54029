"""Labelled examples read from files (core/labelled_data.py): JSONL and CSV, a bad line named file:line, a file
whose extension and contents disagree refused, never read as text."""

from __future__ import annotations

from pathlib import Path

import pytest

from orderlab.core.labelled_data import Columns, read_examples
from orderlab.core.userfiles import FileProblem
from orderlab.errors import OrderlabError

PAIRS = Columns("premise", "hypothesis", "label", "genre")


def test_jsonl_and_csv_give_the_same_examples(tmp_path: Path):
    jsonl = tmp_path / "nli.jsonl"
    first = '{"premise": "a dog ran", "hypothesis": "a dog moved", "label": 0, "genre": "x"}'
    second = '{"premise": "the cat sat", "hypothesis": "no cat", "label": "neutral", "genre": "y"}'
    jsonl.write_text(f"{first}\n\n{second}\n")
    csv = tmp_path / "nli.csv"
    csv.write_text('premise,hypothesis,label,genre\na dog ran,a dog moved,0,x\n"the cat sat",no cat,neutral,y\n')
    from_json, from_csv = read_examples(jsonl, PAIRS), read_examples(csv, PAIRS)
    assert [(e.text, e.pair, e.label, e.group) for e in from_json] == [(e.text, e.pair, e.label, e.group)
                                                                       for e in from_csv]  # fmt: skip
    assert from_json[1].text == ["the", "cat", "sat"] and from_json[0].label == 0
    assert from_json[1].where == f"{jsonl}:3" and from_csv[1].where == f"{csv}:3"


@pytest.mark.parametrize(
    ("name", "content", "fragment"),
    [
        ("bad.jsonl", '{"premise": "a b", "label": 0}\n{"premise": "c d", \n', "bad.jsonl:2: not a JSON object"),
        ("bad.jsonl", '{"premise": "a b", "label": 0}\n[1, 2]\n', "bad.jsonl:2: a JSON list"),
        ("bad.csv", "premise,label\na b,0\nc d,1,extra\n", "bad.csv:3: 3 cells; expected 2"),
        ("bad.csv", '{"premise": "a b"}\n', "JSON contents in a .csv file"),
        ("bad.parquet", "premise,label\na b,0\n", "not Parquet (no PAR1 magic bytes)"),
        ("bad.txt", "a b\n", "extension '.txt'"),
        ("bad.jsonl", '{"text": "a b"}\n', "bad.jsonl:1: no column 'premise'"),
        ("bad.jsonl", '{"premise": "", "label": 0}\n', "bad.jsonl:1: premise: empty"),
        ("bad.jsonl", '{"premise": "a b", "label": 1.5}\n', "label: got float"),
    ],
)
def test_a_bad_file_is_one_line_naming_file_and_line(tmp_path: Path, name: str, content: str, fragment: str):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises((OrderlabError, FileProblem)) as raised:
        read_examples(path, Columns("premise", None, "label", None))
    assert fragment in str(raised.value) and "\n" not in str(raised.value)


def test_a_datasets_cache_without_the_datasets_library_is_one_line():
    import importlib.util

    from orderlab.core.labelled_data import read_hf_dataset

    if importlib.util.find_spec("datasets") is not None:
        pytest.skip("the datasets library is installed here")
    with pytest.raises(OrderlabError, match=r"`datasets` library is not installed; expected `pip install datasets`"):
        read_hf_dataset("glue", "validation", Columns("premise", None, "label", None))


def test_corpus_mode_refuses_a_file_of_examples_rather_than_reading_it_as_text(tmp_path: Path):
    from orderlab.core.corpustext import read_corpus

    path = tmp_path / "nli.jsonl"
    path.write_text('{"premise": "a dog ran", "label": 0}\n')
    with pytest.raises(OrderlabError, match=r"a \.jsonl file; corpus mode reads plain text.*dataset: FILE"):
        read_corpus(path)
