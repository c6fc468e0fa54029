"""Non-finite numbers are never a verdict: refused as input, reported as nan/non-finite when a run produces them."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from orderlab.cli import app
from orderlab.measure import metrics as M

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


@pytest.mark.parametrize("plugin", ["nonfinite_encodings:NanOffsets", "nonfinite_encodings:InfBias"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_run_writes_nan_with_verdict_non_finite_and_exits_non_zero(cli, write_spec, tmp_path, plugin, dtype):
    spec = write_spec(SPEC.format(name="bad", dtype=dtype, encodings=f"[none, '{plugin}']"))
    result = cli.invoke(app, ["run", str(spec), "--out", str(tmp_path / "out")])
    assert result.exit_code == 1, result.output
    assert "came out NaN or inf" in result.output
    metrics = pd.read_csv(tmp_path / "out" / "bad" / "metrics.csv", keep_default_na=False)
    broken, clean = metrics[metrics.encoding == plugin], metrics[metrics.encoding == "none"]
    non_finite = broken[broken.verdict == "non-finite"]
    assert len(non_finite) > 0 and set(non_finite.value) <= {"nan", "inf"}
    assert (broken[broken.verdict != "non-finite"].value.astype(float).map(math.isfinite)).all()
    assert "non-finite" not in set(clean.verdict)  # the position-free stack is measured as usual
    summary = pd.read_csv(tmp_path / "out" / "bad" / "summary.csv", keep_default_na=False)
    assert "non-finite" in set(summary[f"{plugin} verdict"])
    assert not ((summary[plugin] == "0.000000e+00") & (summary[f"{plugin} verdict"] != "invariant")).any()
    assert "nan !" in result.output


def test_float32_overflow_from_finite_input_is_non_finite(cli, write_spec, tmp_path):
    spec = write_spec(
        "name: big\nmodel: {d_model: 2, n_heads: 1, n_layers: 1, norm: none, ffn: false, dtype: float32}\n"
        "embeddings: {kind: explicit, vectors: {a: [3.0e+38, 1], b: [1, 3.0e+38]}}\n"
        "encodings: [none]\ninputs:\n  - sentence: a b\n"
    )
    result = cli.invoke(app, ["run", str(spec), "--out", str(tmp_path)])
    assert result.exit_code == 1, result.output
    metrics = pd.read_csv(tmp_path / "big" / "metrics.csv", keep_default_na=False)
    assert "non-finite" in set(metrics.verdict)


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
