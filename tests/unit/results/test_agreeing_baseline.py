"""`orderlab run` into a folder that holds results of the same spec: a CSV whose numbers all agree within `check`'s
tolerances keeps the bytes there (another CPU's last digits never rewrite a committed baseline); anything else is
written as computed (issue 31, point 6: a fresh clone's run leaves `git status` clean)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from orderlab.cli import app

SPEC = """\
name: digits
model: {d_model: 8, n_heads: 2, n_layers: 1}
encodings: [none, rope]
inputs: [{sentence: dog bites man, permutations: all}]
metrics: [equivariance]
check: {rtol: 1.0e-3, atol: 1.0e-9}
"""


@pytest.fixture
def written(cli, tmp_path) -> tuple[Path, Path]:
    spec = tmp_path / "digits.yaml"
    spec.write_text(SPEC)
    result = cli.invoke(app, ["run", str(spec), "--out", str(tmp_path / "results")])
    assert result.exit_code == 0, result.output
    return spec, tmp_path / "results" / "digits"


def nudged(path: Path, factor: float) -> bytes:
    """The CSV with its largest value scaled by `factor` (as another CPU's round-off would move it), written back."""
    frame = pd.read_csv(path)
    frame.loc[frame["value"].abs().idxmax(), "value"] *= factor
    frame.to_csv(path, index=False, float_format="%.6e")
    return path.read_bytes()


def rerun(cli, spec: Path) -> str:
    result = cli.invoke(app, ["run", str(spec), "--out", str(spec.parent / "results")])
    assert result.exit_code == 0, result.output
    return result.output


def test_values_within_tolerance_keep_the_bytes_already_there_and_say_so(cli, written):
    spec, folder = written
    computed = (folder / "metrics.csv").read_bytes()
    other_cpu = nudged(folder / "metrics.csv", 1 + 1e-6)
    assert other_cpu != computed
    output = rerun(cli, spec)
    assert (folder / "metrics.csv").read_bytes() == other_cpu  # kept: within rtol 1e-3
    assert "kept the bytes already there of metrics.csv" in " ".join(output.split())


def test_a_value_past_the_tolerance_is_written_as_computed(cli, written):
    spec, folder = written
    computed = (folder / "metrics.csv").read_bytes()
    nudged(folder / "metrics.csv", 1.01)
    output = rerun(cli, spec)
    assert (folder / "metrics.csv").read_bytes() == computed
    assert "kept the bytes" not in output


def test_an_edited_spec_or_other_library_versions_rewrite_the_folder(cli, written):
    spec, folder = written
    computed = (folder / "metrics.csv").read_bytes()
    nudged(folder / "metrics.csv", 1 + 1e-6)
    spec.write_text(SPEC + "# a comment: another sha256, the same numbers\n")
    rerun(cli, spec)
    assert (folder / "metrics.csv").read_bytes() == computed
    nudged(folder / "metrics.csv", 1 + 1e-6)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["versions"]["torch"] = "0.0.1"
    (folder / "manifest.json").write_text(json.dumps(manifest))
    rerun(cli, spec)
    assert (folder / "metrics.csv").read_bytes() == computed
