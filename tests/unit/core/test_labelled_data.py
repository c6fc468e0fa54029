"""Labelled examples read from files (core/labelled_data.py): JSONL and CSV, a bad line named file:line, a file
whose extension and contents disagree refused, never read as text."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from orderlab.core.labelled_data import Columns, read_examples
from orderlab.core.userfiles import FileProblem
from orderlab.errors import OrderlabError

ROOT = Path(__file__).resolve().parents[3]
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
        ("bad.jsonl", '{"premise": "a b", "label": 0}\n{"premise": "c d", \n', "bad.jsonl:2: not valid JSON"),
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


def test_a_datasets_cache_without_the_datasets_library_is_one_line(monkeypatch):
    from orderlab.core.labelled_data import read_hf_dataset

    monkeypatch.setitem(sys.modules, "datasets", None)  # `import datasets` now raises ImportError
    with pytest.raises(OrderlabError, match=r"`datasets` library is not installed; expected `pip install 'orderlab"):
        read_hf_dataset("glue", "validation", Columns("premise", None, "label", None))


def test_parquet_without_pyarrow_is_one_line(tmp_path: Path, monkeypatch):
    pytest.importorskip("pyarrow")
    path = tmp_path / "nli.parquet"
    pd.DataFrame({"premise": ["a dog ran"], "label": [0]}).to_parquet(path)
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(OrderlabError, match=r"nli.parquet: reading Parquet needs pyarrow.*orderlab\[data\]"):
        read_examples(path, Columns("premise", None, "label", None))


def test_parquet_gives_the_examples_jsonl_gives(tmp_path: Path):
    pytest.importorskip("pyarrow", reason="needs the optional extra: orderlab[data]")
    rows = [{"premise": "a dog ran", "hypothesis": "a dog moved", "label": 0, "genre": "x"},
            {"premise": "the cat sat", "hypothesis": "no cat", "label": "neutral", "genre": "y"}]  # fmt: skip
    jsonl, parquet = tmp_path / "nli.jsonl", tmp_path / "nli.parquet"
    jsonl.write_text("".join(json.dumps(row) + "\n" for row in rows))
    pd.DataFrame(rows).astype({"label": str}).to_parquet(parquet)
    from_json, from_parquet = read_examples(jsonl, PAIRS), read_examples(parquet, PAIRS)
    assert [(e.text, e.pair, str(e.label), e.group) for e in from_json] == [
        (e.text, e.pair, e.label, e.group) for e in from_parquet
    ]
    assert from_parquet[1].where == f"{parquet}: row 2"


CACHED = """
import json, sys
import datasets
from orderlab.core.labelled_data import Columns, read_hf_dataset
datasets.load_dataset(sys.argv[1], split="validation")  # a local folder's dataset, now in the cache by its name
examples = read_hf_dataset("nli_tiny", "validation", Columns("premise", None, "label", None))
print(json.dumps([[e.text, e.label, e.where] for e in examples]))
try:
    read_hf_dataset("glue", "validation", Columns("premise", None, "label", None))
except Exception as error:
    print(type(error).__name__, error)
"""


@pytest.mark.slow
def test_a_dataset_in_the_local_cache_is_read_offline_and_an_uncached_one_is_one_line(tmp_path: Path):
    pytest.importorskip("datasets", reason="needs the optional extra: orderlab[data]")
    folder = tmp_path / "nli_tiny"
    folder.mkdir()
    (folder / "validation.jsonl").write_text(
        '{"premise": "a dog ran", "label": 0}\n{"premise": "the cat", "label": 1}\n'
    )
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "PYTHONPATH": str(ROOT)}
    env.pop("HF_DATASETS_OFFLINE", None), env.pop("HF_HUB_OFFLINE", None)  # orderlab sets them: no request is made
    done = subprocess.run([sys.executable, "-c", CACHED, str(folder)], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=300, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2_000:]
    read, refused = done.stdout.strip().splitlines()[-2:]
    assert json.loads(read) == [[["a", "dog", "ran"], 0, "nli_tiny[validation] row 0"],
                                [["the", "cat"], 1, "nli_tiny[validation] row 1"]]  # fmt: skip
    assert (
        refused.startswith("OrderlabError hf_dataset 'glue' split 'validation': ")
        and "expected a dataset in the" in refused
    )


def test_corpus_mode_refuses_a_file_of_examples_rather_than_reading_it_as_text(tmp_path: Path):
    from orderlab.core.corpustext import read_corpus

    path = tmp_path / "nli.jsonl"
    path.write_text('{"premise": "a dog ran", "label": 0}\n')
    with pytest.raises(OrderlabError, match=r"a \.jsonl file; corpus mode reads plain text.*dataset: FILE"):
        read_corpus(path)
