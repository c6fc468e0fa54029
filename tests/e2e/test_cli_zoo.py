"""`orderlab encodings`, `compare` and `properties` through typer's CliRunner, plugins included."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
from command_line import invoke
from typer.testing import CliRunner

from orderlab.encodings import ENCODINGS
from orderlab.measure.properties import PROPERTIES
from orderlab.measure.sweep_measure import run_sweep
from orderlab.spec.load import load_spec

runner = CliRunner()
TESTS = Path(__file__).resolve().parents[1]

SMALL_SPEC = """\
name: small
seed: 1
model: {d_model: 16, n_heads: 4, n_layers: 2}
encodings: [none, sinusoidal, rope]
inputs:
  - sentence: dog bites man
    permutations: all
probes:
  - [dog bites man, man bites dog]
"""


@pytest.fixture
def small_spec(tmp_path: Path) -> Path:
    path = tmp_path / "small.yaml"
    path.write_text(SMALL_SPEC)
    return path


# --- encodings ------------------------------------------------------------------------------------


def test_encodings_lists_every_encoding_with_kind_position_and_defaults():
    result = invoke("encodings")
    assert result.exit_code == 0, result.output
    for name in ENCODINGS:
        assert re.search(rf"│ {name}\s+│", result.output), name
    assert "attention bias" in result.output and "rotary (q, k)" in result.output
    assert "max_len=512" in result.output and "num_buckets=32" in result.output
    assert "untrained" in result.output


# --- compare --------------------------------------------------------------------------------------


def test_compare_writes_the_worst_value_per_input_metric_and_layer(small_spec, tmp_path):
    result = invoke("compare", "--encodings", "sinusoidal,rope", str(small_spec), "--out", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    assert "sinusoidal" in result.output and "rope" in result.output and "✗" in result.output
    table = pd.read_csv(tmp_path / "out" / "compare" / "compare.csv")
    assert list(table.columns) == [
        "spec", "case", "input", "metric", "layer", "sinusoidal", "rope", "sinusoidal verdict", "rope verdict"
    ]  # fmt: skip
    # the same numbers from an ordinary run of the spec, reduced by hand
    tidy = run_sweep(load_spec(small_spec).spec).metrics
    for name in ("sinusoidal", "rope"):
        for (metric, layer), group in tidy[(tidy.encoding == name) & (tidy.case == "permutation")].groupby(
            ["metric", "layer"]
        ):
            row = table[(table.case == "permutation") & (table.metric == metric) & (table.layer == layer)]
            assert row[name].item() == pytest.approx(group.value.max(), rel=1e-6)


def test_compare_keeps_only_the_chosen_metrics(small_spec, tmp_path):
    result = invoke(
        "compare", "-e", "none,rope", str(small_spec), "-m", "equivariance", "-m", "pair_l2", "--out", str(tmp_path)
    )
    assert result.exit_code == 0, result.output
    table = pd.read_csv(tmp_path / "compare" / "compare.csv")
    assert set(table.metric) == {"equivariance", "pair_l2"}
    assert (table[table.metric == "equivariance"]["none verdict"] == "equivariant").all()


def test_compare_runs_every_shipped_experiment_by_default(small_spec, tmp_path, monkeypatch):
    (tmp_path / "experiments").mkdir()
    small_spec.rename(tmp_path / "experiments" / "small.yaml")
    monkeypatch.chdir(tmp_path)
    result = invoke("compare", "--encodings", "alibi,t5", "-q")
    assert result.exit_code == 0, result.output
    assert set(pd.read_csv(tmp_path / "results" / "compare" / "compare.csv").spec) == {"small"}


def test_compare_names_the_combination_of_a_sweep_and_skips_pretrained_specs(small_spec, tmp_path, monkeypatch):
    (tmp_path / "experiments").mkdir()
    swept = (
        SMALL_SPEC.replace("name: small", "name: swept")
        .replace("causal: false", "")
        .replace("n_layers: 2}", "n_layers: 2, causal: [false, true]}")
    )
    (tmp_path / "experiments" / "swept.yaml").write_text(swept)
    pretrained = "model: {kind: pretrained, name: minilm}\ninputs: [{sentence: dog bites man}]\n"
    (tmp_path / "experiments" / "minilm.yaml").write_text(pretrained)
    monkeypatch.chdir(tmp_path)
    result = invoke("compare", "-e", "none", "-m", "equivariance", "-q")
    assert result.exit_code == 0, result.output
    table = pd.read_csv(tmp_path / "results" / "compare" / "compare.csv")
    assert set(table.spec) == {"swept"}
    causal = table[table.input == "dog bites man [causal=true]"]
    bidirectional = table[table.input == "dog bites man [causal=false]"]
    assert (bidirectional["none verdict"] == "equivariant").all()
    assert (causal[causal.layer > 0]["none verdict"] == "order-sensitive").all()  # the mask alone breaks it
    refused = invoke("compare", "-e", "none", "experiments/minilm.yaml")
    assert refused.exit_code == 2 and "a pretrained model brings its own positions" in refused.output


def test_compare_names_every_spec_it_skips_and_why(small_spec, tmp_path, monkeypatch):
    experiments = tmp_path / "experiments"
    experiments.mkdir()
    small_spec.rename(experiments / "small.yaml")
    others = {
        "minilm.yaml": "model: {kind: pretrained, name: minilm}\ninputs: [{sentence: dog bites man}]\n",
        "zoo.yaml": "model: {kind: hf, family: bert}\ninputs: [{sentence: dog bites man}]\n",
        "trained.yaml": "model: {kind: checkpoint, path: weights.safetensors}\ninputs: [{sentence: dog bites man}]\n",
        "corpus.yaml": "model: {d_model: 16}\ninputs: {file: corpus.txt, shuffles: 2}\n",
    }
    for name, text in others.items():
        (experiments / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    result = invoke("compare", "-e", "none", "-m", "equivariance")
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("skipped")]
    assert lines == [
        "skipped experiments/corpus.yaml: corpus inputs have no permutations to line up, so compare cannot swap "
        "its encodings",
        "skipped experiments/minilm.yaml: a pretrained model brings its own positions, so compare cannot swap its "
        "encodings",
        "skipped experiments/trained.yaml: a checkpoint is measured under the encoding it was trained with, so "
        "compare cannot swap its encodings",
        "skipped experiments/zoo.yaml: a pretrained model brings its own positions, so compare cannot swap its "
        "encodings",
    ]  # fmt: skip
    assert set(pd.read_csv(tmp_path / "results" / "compare" / "compare.csv").spec) == {"small"}
    quiet = invoke("compare", "-e", "none", "-m", "equivariance", "-q", "--force")
    assert quiet.exit_code == 0 and quiet.output == ""


def test_a_long_comparison_ends_with_a_hint_to_choose_metrics(tmp_path):
    spec = tmp_path / "long.yaml"
    spec.write_text(
        "name: long\nmodel: {d_model: 16, n_heads: 4, n_layers: 2}\nencodings: [none]\ninputs:\n"
        "  - {sentence: dog bites man, permutations: all}\n  - {sentence: the cat sat, permutations: all}\n"
        "  - {sentence: a b c d, permutations: all}\n  - {sentence: one two three, permutations: all}\n"
    )
    result = invoke("compare", "-e", "none", str(spec), "--out", str(tmp_path))
    assert result.exit_code == 0, result.output
    rows = len(pd.read_csv(tmp_path / "compare" / "compare.csv"))
    assert rows > 60
    assert f"{rows:,} rows: choose some with --metric (-m equivariance -m pair_distance" in result.output
    chosen = invoke("compare", "-e", "none", str(spec), "-m", "equivariance", "--out", str(tmp_path), "--force")
    assert chosen.exit_code == 0, chosen.output
    assert "choose some with --metric" not in chosen.output


def test_compare_without_specs_or_experiments_says_so(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke("compare", "-e", "rope")
    assert result.exit_code == 2
    assert "no specs given" in result.output


def test_compare_answers_an_unknown_encoding_with_did_you_mean(small_spec, tmp_path):
    result = invoke("compare", "--encodings", "sinusoidal,rpoe", str(small_spec), "--out", str(tmp_path))
    assert result.exit_code == 2
    assert "Unknown encoding 'rpoe'. Did you mean: rope?" in result.output
    assert not (tmp_path / "compare").exists()


def test_compare_answers_an_unknown_metric_with_did_you_mean(small_spec, tmp_path):
    result = invoke("compare", "-e", "rope", str(small_spec), "--metric", "equivarance", "--out", str(tmp_path))
    assert result.exit_code == 2
    assert "Did you mean: equivariance?" in result.output


def test_compare_refuses_an_encoding_the_spec_cannot_run(tmp_path):
    spec = tmp_path / "odd.yaml"
    spec.write_text(SMALL_SPEC.replace("d_model: 16, n_heads: 4", "d_model: 12, n_heads: 4").replace(", rope]", "]"))
    result = invoke("compare", "-e", "none,rope", str(spec), "--out", str(tmp_path))
    assert result.exit_code == 2
    assert "encoding 'rope' cannot run on this spec" in result.output and "even head size" in result.output


# --- properties -----------------------------------------------------------------------------------


def test_properties_prints_and_writes_every_property_for_every_encoding(tmp_path):
    result = invoke(
        "properties", "-e", "sinusoidal,learned", "--max-len", "16", "--d-model", "16", "--out", str(tmp_path)
    )
    assert result.exit_code == 0, result.output
    table = pd.read_csv(tmp_path / "properties" / "properties.csv")
    assert list(table.columns) == ["encoding", "property", "figure", "limit", "verdict", "note"]
    assert len(table) == 2 * len(PROPERTIES)
    assert "✗ error" in result.output  # learned past max_len


def test_properties_help_defines_each_measurement():
    result = invoke("properties", "--help")
    assert result.exit_code == 0
    for prop in PROPERTIES:
        assert f"{prop}:" in result.output


@pytest.mark.parametrize("max_len", ["2", "100000"])
def test_properties_refuses_a_length_out_of_range(tmp_path, max_len):
    result = invoke("properties", "--max-len", max_len, "--out", str(tmp_path))
    assert result.exit_code == 2
    assert f"--max-len {max_len}: expected 4 to 1024 slots" in result.output


def test_properties_refuses_a_width_the_heads_do_not_divide(tmp_path):
    result = invoke("properties", "--d-model", "10", "--out", str(tmp_path))
    assert result.exit_code == 2
    assert "not divisible" in result.output


# --- plugins --------------------------------------------------------------------------------------


def test_a_plugin_encoding_is_measured_like_a_built_in(plugins, tmp_path):
    result = invoke(
        "properties",
        "-e",
        "plugin_encodings:SquaredDistance",
        "--max-len",
        "16",
        "--d-model",
        "16",
        "--out",
        str(tmp_path),
    )
    assert result.exit_code == 0, result.output
    table = pd.read_csv(tmp_path / "properties" / "properties.csv").set_index("property")
    assert table.loc["relative-aware", "verdict"] == "pass"


def test_a_plugin_encoding_named_in_a_spec_runs(plugins, small_spec, tmp_path):
    small_spec.write_text(
        small_spec.read_text().replace("[none, sinusoidal, rope]", "[none, plugin_encodings:SquaredDistance]")
    )
    result = invoke("run", str(small_spec), "--out", str(tmp_path), "-q")
    assert result.exit_code == 0, result.output
    assert "plugin_encodings:SquaredDistance" in set(pd.read_csv(tmp_path / "small" / "metrics.csv").encoding)


@pytest.mark.parametrize(
    ("plugin", "message"),
    [
        ("NotAnEncoding", "expected a subclass of orderlab.encodings.encoding.PositionalEncoding"),
        ("WrongKind", "kind 'sideways'; expected one of none, additive, bias, rotary"),
        ("NoDefault", "parameter 'width' has no default"),
        ("WrongShape", "attention_bias(q, k) returned shape (4, 4); expected None or a real tensor broadcastable to"),
        ("Missing", "encoding 'plugin_encodings:Missing' raised AttributeError at import"),
    ],
)
def test_a_broken_plugin_is_rejected_with_exit_2(plugins, small_spec, tmp_path, plugin, message):
    result = invoke("compare", "-e", f"plugin_encodings:{plugin}", str(small_spec), "--out", str(tmp_path))
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output


def test_a_broken_plugin_in_a_spec_is_reported_at_its_line(plugins, small_spec):
    small_spec.write_text(
        small_spec.read_text().replace("[none, sinusoidal, rope]", "[none, plugin_encodings:WrongKind]")
    )
    result = invoke("validate", str(small_spec))
    assert result.exit_code == 2
    assert (
        f"{small_spec}:4: encodings[1]: encoding 'plugin_encodings:WrongKind' does not fit the protocol"
        in result.output
    )


def test_the_example_in_docs_encodings_md_is_a_working_plugin(tmp_path, monkeypatch):
    docs = (TESTS.parent / "docs" / "encodings.md").read_text()
    example = re.search(r"```python\n(.*?)```", docs, re.DOTALL).group(1)
    assert len(example.strip().splitlines()) <= 22
    (tmp_path / "my_encodings.py").write_text(example)
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = tmp_path / "window.yaml"
    spec.write_text(SMALL_SPEC.replace("[none, sinusoidal, rope]", '[none, {name: "my_encodings:Window", width: 3}]'))
    result = invoke("run", str(spec), "--out", str(tmp_path), "-q")
    assert result.exit_code == 0, result.output
    result = invoke(
        "properties", "-e", "my_encodings:Window", "--max-len", "16", "--d-model", "16", "--out", str(tmp_path)
    )
    assert result.exit_code == 0, result.output


def test_compare_estimates_the_spec_again_with_its_encodings_swapped_in(tmp_path):
    sentences = "\n".join(f"  - {{sentence: s{i} a b c d e f g h, permutations: all}}" for i in range(24))
    spec = tmp_path / "long.yaml"
    spec.write_text("model: {d_model: 256, n_heads: 4, n_layers: 48}\nencodings: [none]\nrows: summary\n"
                    f"metrics: [equivariance]\ninputs:\n{sentences}\n")  # fmt: skip
    assert invoke("validate", str(spec)).exit_code == 0  # one encoding fits the run-time limit
    result = invoke("compare", "-e", "none,sinusoidal,rope,alibi,t5", str(spec), "--out", str(tmp_path))
    assert result.exit_code == 2, result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith(f"error: {spec}:") and "the limit is" in line
    assert not (tmp_path / "compare").exists()
