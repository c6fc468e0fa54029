"""`orderlab run` end to end on the shipped specs, through typer's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from command_line import python

from orderlab.cli import app
from orderlab.vocabulary.columns import KEY_COLUMNS

ROOT = Path(__file__).resolve().parents[2]
EXPERIMENTS = ROOT / "experiments"


def worst(table: pd.DataFrame, encoding: str, metric: str) -> float:
    return table[(table.encoding == encoding) & (table.metric == metric)].value.max()


@pytest.fixture(scope="module")
def flagship(tmp_path_factory):
    out = tmp_path_factory.mktemp("results")
    from typer.testing import CliRunner

    result = CliRunner().invoke(app, ["run", str(EXPERIMENTS / "dog_bites_man.yaml"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return result, out / "dog_bites_man"


@pytest.mark.slow
def test_flagship_prints_the_table_and_writes_the_folder(flagship):
    result, folder = flagship
    written = ["attention.csv", "manifest.json", "metrics.csv", "orders.csv", "summary.csv"]
    assert sorted(p.name for p in folder.iterdir()) == written
    for word in ("equivariance", "invariance_mean", "pair_cosine", "none", "sinusoidal", "rope"):
        assert word in result.output
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["spec"]["name"] == "dog_bites_man" and len(manifest["spec"]["sha256"]) == 64
    assert {"torch", "python", "orderlab", "numpy"} <= set(manifest["versions"])


@pytest.mark.slow
def test_flagship_measures_no_encoding_as_equivariant_and_the_others_not(flagship):
    table = pd.read_csv(flagship[1] / "metrics.csv")
    for metric in ("equivariance", "invariance_mean", "attention_equivariance", "pair_cosine", "pair_l2"):
        assert worst(table, "none", metric) == 0, metric  # within the run's round-off, written as 0
        assert worst(table, "sinusoidal", metric) > 1e-3, metric
        assert worst(table, "rope", metric) > 1e-3, metric
    none_rows = table[table.encoding == "none"]
    assert set(none_rows[none_rows.metric == "equivariance"].verdict) == {"equivariant"}


@pytest.mark.slow
def test_metrics_csv_is_tidy_sorted_and_fixed_format(flagship):
    folder = flagship[1]
    table = pd.read_csv(folder / "metrics.csv", keep_default_na=False)
    assert list(table.columns) == [*KEY_COLUMNS, "value", "verdict"]
    assert not table.duplicated(KEY_COLUMNS).any()
    # 6 permutations x 3 encodings x (3 layers x 6 hidden-state metrics + 2 layers x 4 heads attention)
    permutation_rows = table[table.case == "permutation"]
    assert len(permutation_rows) == 6 * 3 * (3 * 6 + 2 * 4)
    lines = (folder / "metrics.csv").read_text().splitlines()[1:]
    assert all("e" in line.split(",")[-2] for line in lines)  # every value in %.6e
    resorted = table.sort_values(KEY_COLUMNS, kind="mergesort", ignore_index=True)
    assert resorted.equals(table)


def test_quiet_run_prints_nothing(cli, tmp_path):
    result = cli.invoke(app, ["run", str(EXPERIMENTS / "dog_bites_man.yaml"), "--out", str(tmp_path), "-q"])
    assert result.exit_code == 0 and result.output == ""


def test_cuda_without_a_gpu_is_a_clear_error(cli, tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    result = cli.invoke(
        app, ["run", str(EXPERIMENTS / "dog_bites_man.yaml"), "--out", str(tmp_path), "--device", "cuda"]
    )
    assert result.exit_code == 2 and "no CUDA device" in result.output


def test_schema_is_json_schema_with_descriptions(cli):
    result = cli.invoke(app, ["schema"])
    schema = json.loads(result.output)
    assert schema["title"] == "Spec"
    assert all("description" in field for field in schema["properties"].values())


@pytest.mark.slow
def test_help_and_validate_do_not_import_torch_or_pandas():
    code = (
        "import sys; from orderlab.cli import app\n"
        "try:\n    app(['validate', 'experiments/dog_bites_man.yaml'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('torch', 'pandas') if m in sys.modules))"
    )
    out = python("-c", code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"
