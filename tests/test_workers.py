"""`orderlab run --workers N`: shards on a local Dask cluster give the whole run's files; a worker that dies is
replaced and its shard run again; without the [dist] extra the option is one line."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest
from stalling import snapshot, start_stalled

from orderlab.cli import app

ROOT = Path(__file__).resolve().parents[1]
CAUSAL_PREFIX = ROOT / "experiments" / "causal_prefix.yaml"

# A user encoding (`dying_encoding:Dying`) whose first forward pass kills its process outright (os._exit: no
# exception, no cleanup), once: it leaves a file behind, and every later pass measures as `none` does.
DYING_MODULE = """
import os, pathlib
from orderlab.encodings.base import PositionalEncoding

class Dying(PositionalEncoding):
    name, kind, relative, reference = "dying", "none", False, "test only"

    def input_offsets(self, n):
        died = pathlib.Path(os.environ["ORDERLAB_TEST_DIED"])
        if not died.exists():
            died.touch()
            os._exit(1)
        return super().input_offsets(n)
"""
DYING_SPEC = """
name: dies_once
model: {d_model: 16, n_heads: 2, n_layers: 2, dtype: float64}
encodings: [none, "dying_encoding:Dying"]
inputs:
  - sentence: the dog bit the man
    permutations: all
metrics: [equivariance, attention]
"""


def needs_dask() -> None:
    pytest.importorskip("distributed", reason="needs the optional extra: pip install 'orderlab[dist]'")


def run(cli, *arguments: str) -> None:
    result = cli.invoke(app, ["run", *arguments, "-q"])
    assert result.exit_code == 0, result.output


def assert_same_files(folder: Path, whole: Path) -> None:
    assert sorted(p.name for p in folder.iterdir()) == sorted(p.name for p in whole.iterdir())
    for path in whole.iterdir():
        assert (folder / path.name).read_bytes() == path.read_bytes(), path.name


def test_without_the_dist_extra_workers_is_one_line_and_writes_nothing(cli, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # `import distributed` now raises ImportError
    result = cli.invoke(app, ["run", str(CAUSAL_PREFIX), "--out", str(tmp_path), "--workers", "2"])
    assert result.exit_code == 2 and result.output == (
        "error: --workers and --scheduler need Dask; expected it installed: pip install 'orderlab[dist]'\n"
    )
    assert not (tmp_path / "causal_prefix").exists()


def test_shard_and_workers_together_are_refused(cli, tmp_path):
    result = cli.invoke(app, ["run", str(CAUSAL_PREFIX), "--out", str(tmp_path), "--workers", "2", "--shard", "1/2"])
    assert result.exit_code == 2 and result.output.startswith("error: --shard, --workers and --scheduler")


def test_two_local_workers_write_the_files_of_a_single_run(cli, tmp_path):
    needs_dask()
    run(cli, str(CAUSAL_PREFIX), "--out", str(tmp_path / "whole"))
    run(cli, str(CAUSAL_PREFIX), "--out", str(tmp_path / "dask"), "--workers", "2")
    assert_same_files(tmp_path / "dask" / "causal_prefix", tmp_path / "whole" / "causal_prefix")
    assert sorted(p.name for p in (tmp_path / "dask").iterdir()) == ["causal_prefix"]  # no shard folders left


def test_a_worker_that_dies_mid_task_is_replaced_and_its_shard_run_again(cli, write_spec, tmp_path, monkeypatch):
    needs_dask()
    (tmp_path / "dying_encoding.py").write_text(DYING_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))  # worker processes start with this process's sys.path
    monkeypatch.setenv("ORDERLAB_TEST_DIED", str(tmp_path / "died"))
    spec = write_spec(DYING_SPEC)
    run(cli, str(spec), "--out", str(tmp_path / "dask"), "--workers", "2")
    assert (tmp_path / "died").exists()  # a worker did die mid-task
    run(cli, str(spec), "--out", str(tmp_path / "whole"))
    assert_same_files(tmp_path / "dask" / "dies_once", tmp_path / "whole" / "dies_once")


def test_ctrl_c_while_workers_measure_leaves_no_folder_and_no_shards(tmp_path):
    needs_dask()
    process = start_stalled(tmp_path, ["run", "stalled.yaml", "--out", "results", "--workers", "2"])
    process.send_signal(signal.SIGINT)  # while a worker waits in the forward pass
    _, stderr = process.communicate(timeout=60)
    (tmp_path / "release").touch()
    assert process.returncode == 130, stderr
    assert stderr.decode().strip().splitlines()[-1] == "interrupted: no results were written"
    assert snapshot(tmp_path / "results") == {}  # no results, no staging folder, no lock
