"""orderlab.api: the notebook session of docs/python.md runs as written, and the API returns what the CLI writes."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
from command_line import python
from typer.testing import CliRunner

import orderlab.api as ol
from orderlab.cli import app
from orderlab.errors import OrderlabError

ROOT = Path(__file__).resolve().parents[2]
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


TINY = (
    "name: tiny\nmodel: {d_model: 8, n_heads: 2, n_layers: 1}\nencodings: [none, rope]\ninputs: [{sentence: a b c}]\n"
    "metrics: [equivariance, invariance]\n"  # no map per attention head: a figure each
)


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    spec = tmp_path / "tiny.yaml"
    spec.write_text(TINY)
    return spec


@pytest.mark.slow
def test_every_command_is_a_function_on_the_cli_path(tiny: Path, tmp_path: Path):
    from matplotlib.figure import Figure

    result = ol.run(tiny, out=tmp_path / "out", plot=True, html=True, progress=False)
    assert (result.folder / "figures").is_dir() and (result.folder / "report.html").is_file()
    figures = ol.plot(result.folder)
    assert figures and all(isinstance(figure, Figure) for figure in figures.values())
    assert ol.report([result.folder], tmp_path / "r.html").read_text().startswith("<!")
    frame = ol.trace(tiny, layer=1, progress=False)
    assert {"quantity", "value"} <= set(frame.columns) and len(frame) > 0
    assert set(ol.properties("none,rope", max_len=8, d_model=8, n_heads=2, progress=False)["encoding"]) == {
        "none",
        "rope",
    }
    assert "rope" in set(ol.encodings()["name"]) and "gpt2" in set(ol.models()["family"])
    assert ol.plan(tiny) and ol.schema()["title"] == "Spec"
    checked = ol.check(tiny, out=tmp_path / "out", progress=False)
    assert checked.exit_code == 0 and [o.status for o in checked.outcomes] == ["clean"]


def test_shards_run_and_merge_as_the_cli_does(tiny: Path, tmp_path: Path):
    shards = [ol.run(tiny, out=tmp_path / "s", shard=f"{k}/2", progress=False).folder for k in (1, 2)]
    merged = ol.merge(shards, out=tmp_path / "merged")
    whole = ol.run(tiny, out=tmp_path / "whole", progress=False)
    assert merged.folder is not None and whole.folder is not None
    assert (merged.folder / "metrics.csv").read_bytes() == (whole.folder / "metrics.csv").read_bytes()


def test_a_result_shows_its_summary_and_verdicts_in_a_notebook(tiny: Path):
    result = ol.run(tiny, progress=False)
    shown = result._repr_html_()
    assert "<table" in shown and all(f"{verdict}: {count}" in shown for verdict, count in result.verdicts.items())
    assert str(len(result.metrics)) not in repr(result).split("rows=")[0]  # the repr is one line, not the frame
    assert "\n" not in repr(result)


def test_progress_is_a_bar_a_function_or_nothing(tiny: Path, monkeypatch, capsys):
    import io

    from rich.console import Console

    from orderlab.report import terminal

    ol.run(tiny, progress=False)
    assert capsys.readouterr() == ("", "")
    calls: list[tuple[int, int]] = []
    ol.run(tiny, progress=lambda done, total: calls.append((done, total)))
    assert calls and calls[-1][0] == calls[-1][1]
    drawn = io.StringIO()
    monkeypatch.setattr(terminal, "stderr_console", lambda: Console(file=drawn, force_terminal=True, width=100))
    monkeypatch.setattr(terminal, "PROGRESS_DELAY_SECONDS", 0.0)
    ol.run(tiny)
    assert "running tiny" in drawn.getvalue()


def test_a_notebook_without_ipywidgets_gets_no_bar_and_no_warning(monkeypatch):
    from rich.console import Console

    from orderlab.report import terminal

    monkeypatch.setattr("importlib.util.find_spec", lambda name, *rest: None)
    assert not terminal.drawable(Console(force_jupyter=True, force_terminal=False))
    assert terminal.drawable(Console(force_terminal=True))


def test_a_single_path_or_name_is_one_item_never_its_characters(monkeypatch):
    monkeypatch.chdir(ROOT)
    table = ol.compare("experiments/dog_bites_man.yaml", encodings="none", metrics="equivariance", progress=False)
    assert set(table["metric"]) == {"equivariance"} and set(table["spec"]) == {"dog_bites_man"}


@pytest.mark.slow
def test_transformers_import_leaves_no_tqdm_warning_in_a_notebook():
    """A Jupyter kernel without ipywidgets: tqdm.auto warns 'IProgress not found' when transformers imports it."""

    pytest.importorskip("transformers")
    code = (
        "import sys, types, warnings\n"
        "sys.modules['ipykernel.zmqshell'] = types.ModuleType('ipykernel.zmqshell')\n"
        "ipython = types.ModuleType('IPython'); ipython.get_ipython = lambda: object()\n"
        "sys.modules['IPython'] = ipython\n"
        "from orderlab.models.hf.loader import import_transformers\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    import_transformers(); from transformers import AutoModel; import tqdm.auto\n"
        "assert not caught, [str(w.message) for w in caught]\n"
    )
    done = python("-c", code, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
