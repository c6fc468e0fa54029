"""bfloat16 and float16 end to end on small shapes: run, check, compare, report and the Python API, with verdicts
judged by the round-off each run measured; a 16-bit dtype or tf32 the device cannot run is one line, exit 2."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from precision import judged_run

import orderlab.api as ol
from orderlab.cli import app
from orderlab.measure.verdicts import DEFAULT_RESOLUTION, FLOOR, noise_scale, round_off_lines
from orderlab.vocabulary.verdict_words import ORDER_SENSITIVE, PASSING_WORDS, eps

SPEC = """
name: low
seed: 1
model: {{d_model: 16, n_heads: 2, n_layers: 2, causal: {causal}, dtype: {dtype}}}
encodings: [none, rope, alibi]
inputs:
  - sentence: the dog saw a cat
    permutations: {{random: 12}}
probes:
  - [the dog saw a cat, a cat saw the dog]
metrics: [equivariance, invariance, attention, token_shift, pair_distance]
"""
LOW = ["bfloat16", "float16"]


def write(tmp_path: Path, dtype: str, causal: bool = False) -> Path:
    path = tmp_path / f"low_{dtype}.yaml"
    path.write_text(SPEC.format(dtype=dtype, causal=str(causal).lower()))
    return path


@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.slow
def test_run_check_compare_report_and_the_api_in_16_bits(dtype, cli, tmp_path):
    spec = write(tmp_path, dtype)
    out = tmp_path / "results"
    ran = cli.invoke(app, ["run", str(spec), "--out", str(out)])
    assert ran.exit_code == 0, ran.output
    assert f"({dtype})" in ran.output and "≈0 ✓" in ran.output and "✗" in ran.output
    metrics = pd.read_csv(out / "low" / "metrics.csv")
    none = metrics[(metrics.encoding == "none") & metrics.metric.isin(["equivariance", "attention_equivariance"])]
    assert len(none) > 0 and (none.value == 0).all()  # no position, no order: round-off in 16 bits too
    assert (metrics[metrics.encoding == "rope"].verdict == ORDER_SENSITIVE).any()
    checked = cli.invoke(app, ["check", str(spec), "--out", str(out)])
    assert checked.exit_code == 0, checked.output
    assert f"({dtype})" in checked.output
    compared = cli.invoke(app, ["compare", "--encodings", "none,rope", str(spec), "--out", str(tmp_path / "cmp")])
    assert compared.exit_code == 0, compared.output
    reported = cli.invoke(app, ["report", str(out / "low"), "--out", str(tmp_path / "report.html")])
    assert reported.exit_code == 0, reported.output
    result = ol.run(spec, out=tmp_path / "api")
    assert (result.folder / "metrics.csv").read_bytes() == (out / "low" / "metrics.csv").read_bytes()
    assert len(result.metrics) == len(metrics)
    assert ol.load(out / "low").manifest["dtype"] == dtype


@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("causal", [False, True])
def test_16_bit_verdicts_agree_with_float32_wherever_16_bits_resolve(dtype, causal, tmp_path, monkeypatch):
    """The stack in 16 bits is the float32 stack's weights rounded: every effect float32 sees above twice the 16-bit
    line is order-sensitive in 16 bits, and nothing round-off in float32 is order-sensitive in 16 bits; a value within
    a 16-bit line wider than the resolution is never called passing (the 16-bit run's own verdicts: no escalation)."""
    text = write(tmp_path, dtype, causal).read_text() + "\nescalate: false\n"
    single = judged_run(text, "float32", tmp_path, monkeypatch)
    low = judged_run(text, dtype, tmp_path, monkeypatch)
    assert (low.metrics == single.metrics).all()
    assert not (low.sensitive & ~single.sensitive).any()
    resolvable = single.values > 2 * low.lines
    assert resolvable.sum() > 10 and low.sensitive[resolvable].all()
    assert (low.lines > single.lines).mean() > 0.9  # 16 bits resolve less: their lines sit higher
    coarse = low.lines > DEFAULT_RESOLUTION
    assert coarse.any() and not np.isin(low.verdicts[coarse], PASSING_WORDS).any()


def test_16_bit_lines_come_from_the_measured_noise_over_a_float32_floor():
    lines = round_off_lines(np.array([0.0, 1e-2]), "bfloat16")
    assert lines[0] == FLOOR * eps("float32")  # the metrics themselves are computed in float32
    assert lines[1] == 16 * 1e-2
    assert noise_scale("bfloat16", "float32") == noise_scale("float32", "float64") == 1.0
    assert noise_scale("float64", "float32") == eps("float64") / eps("float32")
    assert noise_scale("float32", "float32") == 1.0  # a float64 run that computes in float32 inside


def test_a_16_bit_dtype_the_device_cannot_run_is_one_line(cli, tmp_path, monkeypatch):
    spec = write(tmp_path, "float16")

    def no_half(*args, **kwargs):
        raise RuntimeError("\"softmax_lastdim_kernel_impl\" not implemented for 'Half'\nmore lines")

    monkeypatch.setattr(torch, "softmax", no_half)
    result = cli.invoke(app, ["run", str(spec), "--out", str(tmp_path / "r")])
    assert result.exit_code == 2, result.output
    line = result.output.strip()
    assert line.count("\n") == 0 and "model.dtype: float16 on cpu" in line and "not implemented" in line
    assert not (tmp_path / "r" / "low").exists()


def test_tf32_is_a_cuda_float32_mode(cli, tmp_path):
    spec = tmp_path / "tf32.yaml"
    spec.write_text(SPEC.format(dtype="float32", causal="false").replace("dtype: float32", "dtype: float32, "
                                                                         "matmul_precision: tf32"))  # fmt: skip
    result = cli.invoke(app, ["run", str(spec), "--out", str(tmp_path / "r")])
    assert result.exit_code == 2 and "tf32 runs on CUDA only, not on cpu" in result.output, result.output
    assert result.output.strip().count("\n") == 0
    spec.write_text(spec.read_text().replace("float32", "bfloat16"))
    result = cli.invoke(app, ["validate", str(spec)])
    assert result.exit_code == 2 and "model.matmul_precision" in result.output and "tf32" in result.output


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_tf32_runs_on_cuda(cli, tmp_path):
    spec = tmp_path / "tf32.yaml"
    spec.write_text(SPEC.format(dtype="float32", causal="false").replace("dtype: float32", "dtype: float32, "
                                                                         "matmul_precision: tf32"))  # fmt: skip
    result = cli.invoke(app, ["run", str(spec), "--out", str(tmp_path / "r"), "--device", "cuda"])
    assert result.exit_code == 0, result.output
