"""Non-finite numbers are never a verdict: refused as input, reported as nan/non-finite when a run produces them."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from orderlab.cli import app
from orderlab.metrics import maths as M

SPEC = """
name: {name}
model: {{d_model: 8, n_heads: 2, n_layers: 2, dtype: {dtype}}}
encodings: {encodings}
inputs:
  - sentence: dog bites man
    permutations: all
probes:
  - [dog bites man, man bites dog]
"""


@pytest.mark.parametrize(
    ("yaml_text", "field"),
    [
        ("embeddings: {kind: explicit, vectors: {a: [1, .nan], b: [1, 2]}}", "embeddings.vectors.a[1]"),
        ("embeddings: {kind: explicit, vectors: {a: [1, 2], b: [-.inf, 2]}}", "embeddings.vectors.b[0]"),
        ("model: {d_model: 2, n_heads: 1, weights: {W_Q: [[1, 0], [0, .nan]], W_K: [[1, 0], [0, 1]], "
         "W_V: [[1, 0], [0, 1]]}}", "model.weights.W_Q[1][1]"),
        ("encodings: [{name: alibi, max_bias: .inf}]", "encodings[0]"),
        ("encodings: [{name: rope, base: .nan}]", "encodings[0]"),
        ("check: {rtol: .inf}", "check.rtol"),
        ("check: {atol: .nan}", "check.atol"),
    ],
)  # fmt: skip
def test_validate_refuses_non_finite_numbers_naming_the_field(cli, write_spec, yaml_text, field):
    model = "" if yaml_text.startswith("model") else "model: {d_model: 2, n_heads: 1}\n"
    spec = write_spec(f"name: x\n{model}{yaml_text}\ninputs:\n  - sentence: a b\n")
    result = cli.invoke(app, ["validate", str(spec)])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "spec.yaml:" in lines[0] and f" {field}: " in lines[0], result.output
    assert "finite" in lines[0]


@pytest.mark.parametrize(
    ("yaml_text", "field", "number"),
    [
        ("embeddings: {kind: explicit, vectors: {a: [1, 2], b: [1.0e+300, 2]}}", "embeddings.vectors.b[0]", "1e+300"),
        ("embeddings: {kind: explicit, vectors: {a: [1, -3.5e+38], b: [1, 2]}}", "embeddings.vectors.a[1]", "-3.5e+38"),
        ("weights: {W_Q: [[1, 0], [0, 1]], W_K: [[1, 0], [0, 1]], W_V: [[1, 0], [4.0e+38, 1]]}",
         "model.weights.W_V[1][0]", "4e+38"),
        ("weights: {W_Q: [[1, 0], [0, 1]], W_K: [[1, 0], [0, 1]], W_V: [[1, 0], [0, 1]], W_O: [[1e39, 0], [0, 1]]}",
         "model.weights.W_O[0][0]", "1e+39"),
    ],
)  # fmt: skip
def test_validate_refuses_explicit_numbers_that_overflow_float32_naming_the_field(cli, write_spec, yaml_text, field,
                                                                                number):  # fmt: skip
    weights = yaml_text.startswith("weights")
    model = f"model: {{d_model: 2, n_heads: 1, dtype: float32{', ' + yaml_text if weights else ''}}}\n"
    spec = write_spec(f"name: x\n{model}{'' if weights else yaml_text}\ninputs:\n  - sentence: a b\n")
    result = cli.invoke(app, ["validate", str(spec)])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "spec.yaml:" in lines[0], result.output
    assert f" {field}: {number} overflows float32 (largest 3.403e+38); expected numbers within the dtype" in lines[0]
    assert cli.invoke(app, ["validate", str(write_spec(spec.read_text().replace("float32", "float64")))]).exit_code == 0


@pytest.mark.parametrize(
    ("plugin", "call", "holds"),
    [
        ("nonfinite_encodings:NanOffsets", "input_offsets(3)", "NaN"),
        ("nonfinite_encodings:InfBias", "attention_bias(q, k)", "inf"),
        ("nonfinite_encodings:NanRotation", "rotate(q, k)", "NaN"),
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_plugin_whose_hook_returns_nan_or_inf_is_a_broken_encoding(cli, write_spec, tmp_path, plugin, call, holds,
                                                                     dtype):  # fmt: skip
    spec = write_spec(SPEC.format(name="bad", dtype=dtype, encodings=f"[none, '{plugin}']"))
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "sentinel.txt").write_text("mine")
    result = cli.invoke(app, ["run", str(spec), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    expected = f"error: encoding {plugin!r}: {call} returned a tensor holding {holds}; expected finite values"
    assert len(result.output.strip().splitlines()) == 1 and result.output.startswith(expected), result.output
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["sentinel.txt"]  # nothing written, nothing lost


def test_a_plugin_bias_may_mask_keys_with_minus_inf(cli, write_spec, tmp_path):
    spec = write_spec(SPEC.format(name="masked", dtype="float64", encodings="[none, 'nonfinite_encodings:WindowMask']"))
    result = cli.invoke(app, ["run", str(spec), "--out", str(tmp_path), "-q"])
    assert result.exit_code == 0, result.output
    metrics = pd.read_csv(tmp_path / "masked" / "metrics.csv", keep_default_na=False)
    assert "non-finite" not in set(metrics.verdict) and "order-sensitive" in set(metrics.verdict)


def test_a_valid_spec_whose_run_overflows_writes_nan_with_verdict_non_finite_and_exits_1(cli, write_spec, tmp_path):
    spec = write_spec(  # 3e38 fits float32 (max 3.4e38), so validate passes it; the stack's sums overflow
        "name: big\nmodel: {d_model: 2, n_heads: 1, n_layers: 1, norm: none, ffn: false, dtype: float32}\n"
        "embeddings: {kind: explicit, vectors: {a: [3.0e+38, 1], b: [1, 3.0e+38]}}\n"
        "encodings: [none]\ninputs:\n  - sentence: a b\n    permutations: all\n"
    )
    assert cli.invoke(app, ["validate", str(spec)]).exit_code == 0
    result = cli.invoke(app, ["run", str(spec), "--out", str(tmp_path)])
    assert result.exit_code == 1, result.output
    assert "came out NaN or inf" in result.output and "nan !" in result.output
    metrics = pd.read_csv(tmp_path / "big" / "metrics.csv", keep_default_na=False)
    non_finite = metrics[metrics.verdict == "non-finite"]
    assert len(non_finite) > 0 and set(non_finite.value) <= {"nan", "inf"}
    assert (metrics[metrics.verdict != "non-finite"].value.astype(float).map(math.isfinite)).all()
    summary = pd.read_csv(tmp_path / "big" / "summary.csv", keep_default_na=False)
    assert "non-finite" in set(summary["none verdict"])
    assert not ((summary["none"] == "0.000000e+00") & (summary["none verdict"] != "invariant")).any()


finite = st.floats(min_value=0, max_value=1e300, allow_nan=False)


@given(finite, finite)
def test_ratio_of_finite_numbers_is_the_quotient_or_inf(numerator, denominator):
    value = float(M.ratio(torch.tensor(numerator, dtype=torch.float64), torch.tensor(denominator, dtype=torch.float64)))
    if denominator > 0:
        assert value == numerator / denominator
    else:
        assert value == (math.inf if numerator > 0 else 0.0)


@pytest.mark.parametrize(
    ("numerator", "denominator"), [(math.nan, 1.0), (1.0, math.nan), (math.nan, 0.0), (0.0, math.nan)]
)
def test_ratio_keeps_nan(numerator, denominator):
    assert math.isnan(float(M.ratio(torch.tensor(numerator), torch.tensor(denominator))))
