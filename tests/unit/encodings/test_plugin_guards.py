"""A user's encoding that raises, calls sys.exit or returns the wrong thing, at any step, is one line and exit 2.

The broken encodings live in tests/plugin_encodings.py, plugin_raises_at_import.py and
plugin_exits_at_import.py; every command is invoked through typer's CliRunner.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from command_line import invoke

from orderlab.encodings import EncodingContext, build_encoding
from orderlab.encodings.plugin_guard import CheckedEncoding
from orderlab.encodings.rope import Rotary

SPEC = """\
name: plugged
seed: 1
model: {{d_model: 16, n_heads: 4, n_layers: 2, dtype: {dtype}}}
encodings: [none, "{encoding}"]
inputs:
  - sentence: the dog bites man
    permutations: all
"""

# (the encoding as a spec names it, what the one line must say after "encoding '<name>'")
AT_LOAD = [
    ("plugin_raises_at_import:Window", " raised RuntimeError at import: missing configuration file"),
    ("plugin_exits_at_import:Window", " called sys.exit(3) at import"),
    ("plugin_encodings:Missing", " raised AttributeError at import: module 'plugin_encodings' has no attribute"),
    ("plugin_encodings:RaisesInCheck", " raised TypeError in validate: check got confused"),
]
AT_BUILD = [
    ("plugin_encodings:RaisesInInit", " raised ZeroDivisionError in __init__: division by zero"),
    ("plugin_encodings:ExitsInInit", " called sys.exit(3) in __init__"),
    ("plugin_encodings:ReturnsAList", ": attention_bias(q, k) returned a list; expected None or a real tensor"),
    ("plugin_encodings:ReturnsComplex", ": attention_bias(q, k) returned a complex128 tensor; expected None or a real"),
    ("plugin_encodings:ReturnsOneRotation", ": rotate(q, k) returned a Tensor; expected a pair of real tensors"),
    (
        "plugin_encodings:WrongDevice",
        ": attention_bias(q, k) returned a tensor on meta; expected None or a real tensor broadcastable to (2, 4, 3, 3)"
        " on cpu",
    ),
]
AT_RUN_TIME = [  # fine on the three slots they are tried on before a run, broken on the spec's four
    ("plugin_encodings:RaisesAtRunTime", " raised RuntimeError in attention_bias(q, k): only three slots"),
    ("plugin_encodings:ExitsAtRunTime", " called sys.exit(4) in rotate(q, k)"),
    (
        "plugin_encodings:WrongShapeAtRunTime",
        ": input_offsets(4) returned shape (3, 16); expected None or a real tensor of shape (4, 16)",
    ),
]


def write_spec(folder: Path, encoding: str, dtype: str = "float64") -> Path:
    path = folder / "plugged.yaml"
    path.write_text(SPEC.format(encoding=encoding, dtype=dtype))
    return path


def assert_one_line(result, encoding: str, message: str) -> None:
    """Exit 2 and a single `error: ...` line naming the class and what it did; no traceback, no other output."""
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith("error: ") and f"encoding {encoding!r}{message}" in lines[0], lines[0]


@pytest.mark.parametrize(("encoding", "message"), AT_LOAD + AT_BUILD + AT_RUN_TIME)
def test_run_reports_a_misbehaving_plugin_in_one_line_and_writes_nothing(plugins, tmp_path, encoding, message):
    result = invoke("run", write_spec(tmp_path, encoding), "--out", tmp_path / "out", "-q")
    assert_one_line(result, encoding, message)
    assert not (tmp_path / "out" / "plugged").exists()


@pytest.mark.parametrize(("encoding", "message"), AT_LOAD)
def test_validate_reports_a_plugin_that_fails_to_load_at_its_spec_line(plugins, tmp_path, encoding, message):
    spec = write_spec(tmp_path, encoding)
    result = invoke("validate", spec)
    assert_one_line(result, encoding, message)
    assert f"{spec}:4: encodings[1]: encoding {encoding!r}" in result.output


@pytest.mark.parametrize(("encoding", "message"), AT_LOAD[:3] + AT_BUILD)
def test_properties_reports_a_misbehaving_plugin_in_one_line(plugins, tmp_path, encoding, message):
    result = invoke("properties", "-e", encoding, "--max-len", "16", "--d-model", "16", "--out", tmp_path, "-q")
    assert_one_line(result, encoding, message)
    assert not (tmp_path / "properties").exists()


def test_properties_reports_a_plugin_broken_past_the_slots_it_was_tried_on(plugins, tmp_path):
    encoding, message = AT_RUN_TIME[2]
    result = invoke("properties", "-e", encoding, "--max-len", "4", "--d-model", "16", "--out", tmp_path, "-q")
    assert_one_line(result, encoding, message)


def test_properties_counts_a_plugin_that_fails_only_past_n_slots_as_not_generalising(plugins, tmp_path):
    encoding = "plugin_encodings:RaisesPastSixteenSlots"
    result = invoke("properties", "-e", encoding, "--max-len", "16", "--d-model", "16", "--out", tmp_path, "-q")
    assert result.exit_code == 0, result.output
    table = pd.read_csv(tmp_path / "properties" / "properties.csv").set_index("property")
    assert table.loc["generalises", "verdict"] == "fail"
    assert table.loc["generalises", "note"] == (
        f"error at 32 slots: encoding {encoding!r} raised IndexError in attention_bias(q, k): no row past slot 15"
    )
    assert table.loc["unique", "verdict"] == "pass"


@pytest.mark.parametrize(("encoding", "message"), AT_RUN_TIME)
def test_trace_reports_a_plugin_that_breaks_at_run_time_in_one_line(plugins, tmp_path, encoding, message):
    spec = write_spec(tmp_path, encoding)
    result = invoke("trace", spec, "--encoding", encoding, "--out", tmp_path / "out")
    assert_one_line(result, encoding, message)


def test_a_float64_bias_is_cast_to_a_float32_run(plugins, tmp_path):
    result = invoke("run", write_spec(tmp_path, "plugin_encodings:Float64Bias", "float32"), "--out", tmp_path, "-q")
    assert result.exit_code == 0, result.output
    metrics = pd.read_csv(tmp_path / "plugged" / "metrics.csv")
    assert "plugin_encodings:Float64Bias" in set(metrics.encoding)


def test_only_a_users_encoding_is_wrapped_in_checks(plugins):
    context = EncodingContext(d_model=16, n_heads=4, causal=False, seed=0)
    assert type(build_encoding("rope", context)) is Rotary
    wrapped = build_encoding("plugin_encodings:SquaredDistance", context, {"width": 3})
    assert isinstance(wrapped, CheckedEncoding)
    assert (wrapped.name, wrapped.kind, wrapped.params.width) == ("squared_distance", "bias", 3)
