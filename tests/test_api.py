"""orderlab.api: the notebook session of docs/python.md runs as written, and the API returns what the CLI writes."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

import orderlab.api as ol
from orderlab.cli import app
from orderlab.errors import OrderlabError

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "python.md"


def test_the_python_docs_session_runs_as_written(monkeypatch, capsys):
    blocks = re.findall(r"```python\n(.*?)```", DOCS.read_text(), re.S)
    assert len(blocks) >= 5, "docs/python.md lost its example"
    monkeypatch.chdir(ROOT)  # the session names experiments/dog_bites_man.yaml
    namespace: dict[str, object] = {}
    for block in blocks:
        exec(compile(block, str(DOCS), "exec"), namespace)
    printed = capsys.readouterr().out
    assert "is not divisible by n_heads=5" in printed  # the bad spec's one line was shown


def test_run_returns_the_frames_the_cli_writes(tmp_path: Path):
    spec = tmp_path / "tiny.yaml"
    spec.write_text(
        "model: {d_model: 8, n_heads: 2, n_layers: 1}\nencodings: [none, rope]\ninputs: [{sentence: a b c}]\n"
    )
    assert CliRunner().invoke(app, ["run", str(spec), "--out", str(tmp_path / "cli"), "--quiet"]).exit_code == 0
    result = ol.run(spec, out=tmp_path / "api")
    written = pd.read_csv(tmp_path / "cli" / "tiny" / "metrics.csv", keep_default_na=False)
    assert result.folder == tmp_path / "api" / "tiny"
    assert (result.folder / "metrics.csv").read_bytes() == (tmp_path / "cli" / "tiny" / "metrics.csv").read_bytes()
    assert list(result.metrics.columns) == list(written.columns) and len(result.metrics) == len(written)
    assert result.verdicts and sum(result.verdicts.values()) > 0


def test_run_without_out_keeps_nothing_on_disk(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = ol.run(
        {"name": "inline", "model": {"d_model": 8, "n_heads": 2, "n_layers": 1}, "inputs": [{"sentence": "a b"}]}
    )
    assert result.folder is None and len(result.metrics) > 0
    assert list(tmp_path.iterdir()) == []


def test_a_bad_dict_spec_names_its_field_not_a_file():
    bad = {"model": {"d_model": 8, "n_heads": 3, "n_layers": 1, "n_layer": 2}, "inputs": [{"sentence": "a b"}]}
    with pytest.raises(OrderlabError) as raised:
        ol.validate(bad)
    assert str(raised.value) == "spec dict: model.n_layer: unknown key 'n_layer'. Did you mean: n_layers?"
    bad["model"].pop("n_layer")  # type: ignore[attr-defined]
    with pytest.raises(OrderlabError) as raised:
        ol.validate(bad)
    assert str(raised.value) == "spec dict: model.d_model: 8 is not divisible by n_heads=3; expected a multiple"


CORPUS_SPEC = {
    "name": "corpus_from_python",
    "model": {"kind": "pretrained", "name": "minilm", "position_embeddings": ["trained"]},
    "inputs": {"file": "data/corpus.txt", "shuffles": 2},
    "metrics": ["invariance"],
}


def test_a_dict_specs_relative_paths_resolve_against_the_working_folder_or_base(tmp_path: Path, monkeypatch):
    pytest.importorskip("transformers")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "corpus.txt").write_text("the dog bites the man\na cat sat on the mat\n")
    monkeypatch.chdir(tmp_path)
    assert ol.validate(CORPUS_SPEC).name == "corpus_from_python"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with pytest.raises(OrderlabError) as raised:
        ol.validate(CORPUS_SPEC, base=elsewhere)
    message = str(raised.value)
    assert message.startswith("spec dict: inputs.file: ") and str(elsewhere / "data" / "corpus.txt") in message
    monkeypatch.chdir(elsewhere)  # the base, not the working folder, is where the file is looked for
    assert ol.validate(CORPUS_SPEC, base=tmp_path).name == "corpus_from_python"
