"""What orderlab promises about reproducibility, tested exactly:

- same machine, same thread count, same versions: byte-identical CSVs, run after run;
- other thread counts and other CPUs (other vector kernels): the same rows, values within `orderlab check`'s
  tolerances, the same verdicts. Values within a run's round-off are written as 0, so they do not churn.
Bytes are never compared across thread counts or CPU kernels: those differ in the last bits by design of the BLAS.

Each shipped spec runs once here, whole, against its committed baseline at another thread count: this is `make test`'s
`orderlab check` (it runs no other); its bytes are compared over two runs of it shortened (fewer training steps, fewer
corpus lines): the same code paths, in seconds.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
import yaml
from command_line import python_orderlab
from typer.testing import CliRunner

from orderlab.cli import app
from orderlab.commands.baseline import plan, run_fresh
from orderlab.results.baseline_diff import compare_folder, tolerances_for
from orderlab.spec.load import load_spec
from orderlab.vocabulary.columns import KEY_COLUMNS

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = plan([], ROOT / "experiments")  # the spec files `orderlab check` checks

# Wide enough that torch splits the work between threads (tensors past its 32,768-element grain).
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


def wide_spec(folder: Path, dtype: str) -> Path:
    words = [f"w{i}" for i in range(32)]
    path = folder / f"wide_{dtype}.yaml"
    path.write_text(WIDE_SPEC.format(dtype=dtype, sentence=" ".join(words), reversed=" ".join(words[::-1])))
    return path


def check(spec: Path, results: Path, *options: str) -> None:
    result = CliRunner().invoke(app, ["check", str(spec), "--results", str(results), *options])
    assert result.exit_code == 0, result.output


def shortened(spec: Path, folder: Path, steps: int = 8, lines: int = 3) -> Path:
    """A copy of a shipped spec in folder that trains for a few steps and reads the first lines of its corpus or of
    its labelled examples (and the whole file a head is fitted on)."""
    data = yaml.safe_load(spec.read_text())
    if "train" in data:
        data["train"]["steps"] = min(steps, data["train"]["steps"])
    if isinstance(data["inputs"], dict) and "file" in data["inputs"]:
        corpus = (spec.parent / data["inputs"]["file"]).read_text().splitlines(keepends=True)
        (folder / "corpus.txt").write_text("".join(corpus[:lines]))
        data["inputs"]["file"] = "corpus.txt"
    if isinstance(data["inputs"], dict) and "dataset" in data["inputs"]:
        examples = (spec.parent / data["inputs"]["dataset"]).read_text().splitlines(keepends=True)
        (folder / "examples.jsonl").write_text("".join(examples[:lines]))
        data["inputs"]["dataset"] = "examples.jsonl"
    if isinstance(data["model"], dict) and "train_head" in data["model"]:  # the file its head is fitted on, whole
        fitted = data["model"]["train_head"]
        (folder / "fitted.jsonl").write_bytes((spec.parent / fitted["dataset"]).read_bytes())
        fitted["dataset"] = "fitted.jsonl"
    path = folder / spec.name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.mark.parametrize("spec", SHIPPED, ids=lambda p: p.stem)
@pytest.mark.slow
def test_shipped_spec_shortened_gives_identical_csvs_on_two_runs(spec: Path, tmp_path: Path):
    loaded = load_spec(shortened(spec, tmp_path))
    assert run_fresh(loaded).texts == run_fresh(loaded).texts


@pytest.mark.parametrize("spec", SHIPPED, ids=lambda p: p.stem)
@pytest.mark.slow
def test_shipped_spec_at_another_thread_count_passes_check_against_its_baseline(spec: Path, threads, monkeypatch):
    """The committed baseline records the thread count it was made at; the spec runs here at another one, as
    `orderlab check` runs it and compared as check compares it (a spec without a baseline fails, as in check). Its
    manifest is the committed one but for that count: running it leaves git clean."""
    monkeypatch.chdir(ROOT)  # the spec's path as `orderlab run experiments/NAME.yaml` records it
    loaded = load_spec(Path("experiments") / spec.name)
    folder = ROOT / "results" / loaded.spec.name  # where `orderlab check` finds the spec's baseline
    committed = json.loads((folder / "manifest.json").read_text())
    threads(2 if committed["torch_threads"] == 1 else 1)
    fresh = run_fresh(loaded)
    comparisons, unmatched = compare_folder(folder, fresh.files, tolerances_for(loaded.spec))
    assert not unmatched and not [c.describe() for c in comparisons if c.drifted]
    assert {**fresh.manifest, "torch_threads": committed["torch_threads"]} == committed


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.slow
def test_wide_spec_at_two_threads_passes_check_against_one_thread(tmp_path: Path, dtype: str, threads):
    spec = wide_spec(tmp_path, dtype)
    threads(1)
    check(spec, tmp_path / "results", "--update")
    threads(2)
    check(spec, tmp_path / "results")


@pytest.mark.parametrize("kernels", ["default", "avx2"])
@pytest.mark.parametrize("spec", ["cat_chased_dog", "causal_prefix"])
@pytest.mark.slow
def test_other_cpu_kernels_pass_check_against_the_committed_baseline(spec: str, kernels: str):
    """ATEN_CPU_CAPABILITY makes torch use the vector kernels of another CPU generation.

    Measured on an AVX-512 machine: 73 of cat_chased_dog's 360 rows differed in bytes between its native kernels
    and `default`, all of them round-off, before round-off was written as 0.
    """
    path = ROOT / "experiments" / f"{spec}.yaml"  # checked against its committed baseline, as CI checks it
    other = python_orderlab("check", path, env={"ATEN_CPU_CAPABILITY": kernels}, timeout=300)
    assert other.returncode == 0, other.stdout + other.stderr


def test_metrics_rows_are_sorted_by_the_key_columns(tmp_path: Path):
    rows = list(csv.DictReader(io.StringIO(run_fresh(load_spec(wide_spec(tmp_path, "float64"))).texts["metrics"])))
    numeric = {"layer", "head"}
    keys = [tuple((c in numeric and r[c] != "", int(r[c]) if c in numeric and r[c] else r[c]) for c in KEY_COLUMNS)
            for r in rows]  # fmt: skip
    assert keys == sorted(keys)


@pytest.mark.slow
def test_two_cli_runs_write_byte_identical_csvs(tmp_path: Path):
    spec = str(ROOT / "experiments" / "dog_bites_man.yaml")
    runner = CliRunner()
    for out in ("first", "second"):
        result = runner.invoke(app, ["run", spec, "--out", str(tmp_path / out), "--quiet"])
        assert result.exit_code == 0, result.output
    for name in ("metrics.csv", "summary.csv", "attention.csv"):
        first = (tmp_path / "first" / "dog_bites_man" / name).read_bytes()
        assert first == (tmp_path / "second" / "dog_bites_man" / name).read_bytes()
