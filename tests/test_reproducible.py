"""The same spec gives byte-identical CSVs: run after run, and at 1 or 2 torch threads."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from orderlab.check import run_fresh
from orderlab.cli import app
from orderlab.runner import KEY_COLUMNS
from orderlab.spec import load_spec

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = sorted((ROOT / "experiments").glob("*.yaml"))

# Wide enough that torch splits the work between threads (tensors past its 32,768-element grain),
# and no encoding among them, whose errors sit at round-off where a changed summation order shows.
WIDE_SPEC = """
name: wide_{dtype}
seed: 7
model: {{d_model: 256, n_heads: 8, n_layers: 2, dtype: {dtype}}}
encodings: [none, rope]
inputs:
  - sentence: {sentence}
    permutations: {{random: 24}}
probes:
  - [{sentence}, {reversed}]
"""


@pytest.fixture
def threads() -> Iterator:
    """Set torch's thread count for a block, restoring it afterwards."""
    before = torch.get_num_threads()
    yield torch.set_num_threads
    torch.set_num_threads(before)


def wide_spec(tmp_path: Path, dtype: str) -> Path:
    words = [f"w{i}" for i in range(32)]
    path = tmp_path / f"wide_{dtype}.yaml"
    path.write_text(WIDE_SPEC.format(dtype=dtype, sentence=" ".join(words), reversed=" ".join(words[::-1])))
    return path


def csv_texts(spec: Path) -> dict[str, str]:
    return run_fresh(load_spec(spec)).texts


@pytest.mark.parametrize("spec", SHIPPED, ids=lambda p: p.stem)
def test_shipped_spec_gives_identical_csvs_on_two_runs(spec: Path):
    assert csv_texts(spec) == csv_texts(spec)


@pytest.mark.parametrize("spec", SHIPPED, ids=lambda p: p.stem)
def test_shipped_spec_gives_identical_csvs_at_one_and_two_threads(spec: Path, threads):
    threads(1)
    single = csv_texts(spec)
    threads(2)
    assert csv_texts(spec) == single


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_wide_spec_gives_identical_csvs_at_one_and_two_threads(tmp_path: Path, dtype: str, threads):
    spec = wide_spec(tmp_path, dtype)
    threads(1)
    single = csv_texts(spec)
    threads(2)
    double = csv_texts(spec)
    assert double == single
    assert re.search(r",\d\.\d{6}e-(0[6-9]|1\d),", single["metrics"])  # round-off sized values, where a
    # reordered sum would show


def test_metrics_rows_are_sorted_by_the_key_columns(tmp_path: Path):
    rows = list(csv.DictReader(io.StringIO(csv_texts(wide_spec(tmp_path, "float64"))["metrics"])))
    numeric = {"layer", "head"}
    keys = [tuple((c in numeric and r[c] != "", int(r[c]) if c in numeric and r[c] else r[c]) for c in KEY_COLUMNS)
            for r in rows]  # fmt: skip
    assert keys == sorted(keys)


def test_two_cli_runs_write_byte_identical_csvs(tmp_path: Path):
    spec = str(ROOT / "experiments" / "dog_bites_man.yaml")
    runner = CliRunner()
    for out in ("first", "second"):
        result = runner.invoke(app, ["run", spec, "--out", str(tmp_path / out), "--quiet"])
        assert result.exit_code == 0, result.output
    for name in ("metrics.csv", "summary.csv"):
        first = (tmp_path / "first" / "dog_bites_man" / name).read_bytes()
        assert first == (tmp_path / "second" / "dog_bites_man" / name).read_bytes()
