"""A model family added from a package of one's own (entry-point group `orderlab.families`), without touching orderlab:
it is in validate, run, `orderlab models` and the generated docs table, found by its model_type; a plug-in that
breaks is one line."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pandas as pd
import pytest
from command_line import invoke

from orderlab.families import FAMILIES
from orderlab.families.docs_table import markdown_table
from orderlab.spec.extras import installed

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not installed("transformers"), reason="needs the optional extra: orderlab[hf]"),
]

# A BERT under another name, written as a user would: its own file, orderlab's pieces.
PLUGIN = """
from orderlab.families.bert import BertConfigFile, seeded_config
from orderlab.families.family import TABLE_ABLATIONS, Family
from orderlab.families.hooks import table_ablation

ablate = table_ablation("embeddings.position_embeddings")

FAMILY = Family("tinybert", "a plug-in's learned table", causal=False, ablations=TABLE_ABLATIONS,
                model_types=("tinybert",), architectures=("Bert",), config_file=BertConfigFile,
                config_class="BertConfig", model_class="BertModel", seeded_config=seeded_config, ablate=ablate)
"""
SPEC = """\
name: plugged
model: {kind: hf, family: tinybert, d_model: 16, n_heads: 2, n_layers: 1, position_embeddings: [trained, zero]}
inputs: [{sentence: dog bites man, permutations: all}]
metrics: [equivariance]
"""


def install(folder: Path, module: str, source: str, value: str, name: str = "tinybert") -> None:
    """A module and the dist-info of a package declaring it under the group, as pip would leave them."""
    (folder / f"{module}.py").write_text(source)
    info = folder / f"{module}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[orderlab.families]\n{name} = {value}\n")


@pytest.fixture
def plugins(tmp_path, monkeypatch):
    """tmp_path on sys.path, and the registry as if never read: it finds what is installed there; restored after,
    the plug-in modules imported from there included (a cached `broken_family` made the next test's import a no-op)."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(FAMILIES, "_items", dict(FAMILIES._items))
    monkeypatch.setattr(FAMILIES, "discovered", False)
    monkeypatch.setattr(FAMILIES, "broken", {})
    importlib.invalidate_caches()
    yield tmp_path
    for name, module in list(sys.modules.items()):
        if str(getattr(module, "__file__", None) or "").startswith(str(tmp_path)):
            del sys.modules[name]


def test_a_plugged_in_family_is_validated_run_listed_and_tabulated(plugins):
    install(plugins, "tiny_family", PLUGIN, "tiny_family:FAMILY")
    spec = plugins / "plugged.yaml"
    spec.write_text(SPEC)
    assert invoke("validate", str(spec)).exit_code == 0
    result = invoke("run", str(spec), "--out", str(plugins / "out"), "--quiet")
    assert result.exit_code == 0, result.output
    rows = pd.read_csv(plugins / "out" / "plugged" / "metrics.csv")
    zero = rows[(rows["encoding"] == "zero") & (rows["permutation"] != "0 1 2")]
    seeded = rows[(rows["encoding"] == "seeded") & (rows["permutation"] != "0 1 2")]
    assert (zero["value"] == 0).all() and (seeded["value"] > 0).any()  # its ablation hook ran
    listed = invoke("models")
    assert listed.exit_code == 0 and "│ tinybert " in listed.output and "a plug-in's learned table" in listed.output
    assert "| `tinybert` | no | a plug-in's learned table |" in markdown_table()
    assert FAMILIES.by_model_type("tinybert").name == "tinybert"


def test_a_spec_naming_no_registered_family_is_one_line(plugins, tmp_path):
    spec = tmp_path / "plugged.yaml"
    spec.write_text(SPEC)
    result = invoke("validate", str(spec))
    assert result.exit_code == 2
    assert "no model family 'tinybert'; expected one of bert, gpt2" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("raise RuntimeError('broken on import')", "cannot be imported (RuntimeError: broken on import)"),
        ("FAMILY = 42", "got int; expected an orderlab.families.Family named 'tinybert'"),
    ],
)
def test_a_broken_plugin_is_one_line_naming_its_entry_point(plugins, source, expected):
    install(plugins, "broken_family", source, "broken_family:FAMILY")
    spec = plugins / "plugged.yaml"
    spec.write_text(SPEC)
    result = invoke("validate", str(spec))
    assert result.exit_code == 2, result.output
    assert f"model family plug-in tinybert (broken_family:FAMILY): {expected}" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_a_broken_plugin_fails_only_the_specs_that_name_it_and_is_listed(plugins):
    """It made every zoo spec exit 2, built-in bert's included (issue 42)."""
    install(plugins, "crashing_family", "raise RuntimeError('broken on import')", "crashing_family:FAMILY")
    spec = plugins / "bert.yaml"
    spec.write_text(SPEC.replace("tinybert", "bert"))
    result = invoke("validate", str(spec))
    assert result.exit_code == 0, result.output
    listed = invoke("models")
    assert listed.exit_code == 0, listed.output
    assert "broken plug-ins" in listed.output and "cannot be imported (RuntimeError: broken on import)" in listed.output


def test_a_plugin_naming_a_class_transformers_lacks_is_one_line_at_run(plugins):
    """It was an AttributeError traceback at run (issue 42)."""
    install(plugins, "nameless_family", PLUGIN.replace('model_class="BertModel"', 'model_class="NoSuchModel"'),
            "nameless_family:FAMILY")  # fmt: skip
    spec = plugins / "plugged.yaml"
    spec.write_text(SPEC)
    result = invoke("run", str(spec), "--out", str(plugins / "out"))
    assert result.exit_code == 2, result.output
    assert "model family tinybert: transformers" in result.output and "has no class 'NoSuchModel'" in result.output
    assert "Traceback" not in result.output
