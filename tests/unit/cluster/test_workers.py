"""`orderlab run --workers N`: shards on a local Dask cluster give the whole run's files; a worker that dies is
replaced and its shard run again; without the [dist] extra the option is one line."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest
from command_line import python_orderlab
from sharding import assert_same_files
from stalling import snapshot, start_stalled

from orderlab.cli import app

ROOT = Path(__file__).resolve().parents[3]
CAUSAL_PREFIX = ROOT / "experiments" / "causal_prefix.yaml"

# A user encoding (`dying_encoding:Dying`) whose first forward pass kills its process outright (os._exit: no
# exception, no cleanup), once: it leaves a file behind, and every later pass measures as `none` does.
DYING_MODULE = """
import os, pathlib
from orderlab.encodings.encoding import PositionalEncoding

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


@pytest.mark.slow
def test_two_local_workers_write_the_files_of_a_single_run(cli, tmp_path):
    needs_dask()
    run(cli, str(CAUSAL_PREFIX), "--out", str(tmp_path / "whole"))
    run(cli, str(CAUSAL_PREFIX), "--out", str(tmp_path / "dask"), "--workers", "2")
    assert_same_files(tmp_path / "dask" / "causal_prefix", tmp_path / "whole" / "causal_prefix")
    assert sorted(p.name for p in (tmp_path / "dask").iterdir()) == ["causal_prefix"]  # no shard folders left


@pytest.mark.slow
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


@pytest.mark.slow
def test_ctrl_c_while_workers_measure_leaves_no_folder_and_no_shards(tmp_path):
    needs_dask()
    process = start_stalled(tmp_path, ["run", "stalled.yaml", "--out", "results", "--workers", "2"])
    process.send_signal(signal.SIGINT)  # while a worker waits in the forward pass
    _, stderr = process.communicate(timeout=60)
    (tmp_path / "release").touch()
    assert process.returncode == 130, stderr
    assert stderr.decode().strip().splitlines()[-1] == "interrupted: no results were written"
    assert snapshot(tmp_path / "results") == {}  # no results, no staging folder, no lock


def live_children(pid: int) -> list[int]:
    """Process ids of every live descendant of `pid` (the cluster's nannies and workers)."""
    psutil = pytest.importorskip("psutil")  # distributed depends on it
    return [child.pid for child in psutil.Process(pid).children(recursive=True) if child.is_running()]


@pytest.mark.slow
def test_sigterm_stops_a_local_cluster_within_seconds_and_leaves_nothing(tmp_path):
    needs_dask()
    psutil = pytest.importorskip("psutil")
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "sentinel.txt").write_text("mine")
    process = start_stalled(tmp_path, ["run", "stalled.yaml", "--out", "results", "--workers", "2"])
    children = [psutil.Process(pid) for pid in live_children(process.pid)]
    assert children, "the cluster's worker processes were not found"
    sent = time.monotonic()
    process.send_signal(signal.SIGTERM)  # while a worker waits in the forward pass
    _, stderr = process.communicate(timeout=30)
    took = time.monotonic() - sent
    (tmp_path / "release").touch()
    assert process.returncode == 143, stderr
    # A stalled worker never finishes: a run that waited for it would meet communicate's timeout. The bound tells a
    # prompt stop from one that sits out the cluster's graceful-close timeouts, with room for a loaded machine.
    assert took < 20, f"SIGTERM took {took:.1f} s to stop the run"
    assert stderr.decode().strip().splitlines()[-1] == "terminated: no results were written"
    _, alive = psutil.wait_procs(children, timeout=5)
    assert not alive, f"worker processes left running: {alive}"
    assert snapshot(tmp_path / "results") == {"sentinel.txt": b"mine"}  # no results, no staging folder, no lock


@pytest.mark.slow
def test_more_workers_than_the_machine_holds_are_refused_before_any_process_starts(cli, tmp_path):
    needs_dask()
    result = cli.invoke(app, ["run", str(CAUSAL_PREFIX), "--out", str(tmp_path), "--workers", "100000"])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --workers 100000: this machine has "), result.output
    assert " per worker for this spec; expected at most " in lines[0]
    assert not (tmp_path / "causal_prefix").exists()


def test_workers_up_to_the_limit_are_accepted(tmp_path):
    from orderlab.cluster.workers import local_worker_limit
    from orderlab.spec.load import load_spec

    limit, why = local_worker_limit(load_spec(CAUSAL_PREFIX))
    assert 2 <= limit <= max(2, os.cpu_count() or 1) and "core(s)" in why


@pytest.mark.slow
def test_an_error_inside_a_worker_is_the_same_one_line_as_in_process(tmp_path):
    """A plug-in encoding that raises only at run time (in the worker's forward pass): one line, exit 2, no Dask
    log or traceback, no retry, nothing written; the line is the one a run without workers prints."""
    needs_dask()
    plugins = str(Path(__file__).resolve().parents[2])
    (tmp_path / "plugged.yaml").write_text(
        'name: plugged\nmodel: {d_model: 16, n_heads: 4, n_layers: 2}\nencodings: [none, "plugin_encodings:'
        'RaisesAtRunTime"]\ninputs:\n  - sentence: the dog bites man\n    permutations: all\n'
    )
    on_workers, here = (
        python_orderlab("run", "plugged.yaml", "--out", "out", "-q", *extra, cwd=tmp_path, env={"PYTHONPATH": plugins},
                        timeout=300)
        for extra in (["--workers", "2"], [])
    )  # fmt: skip
    assert on_workers.returncode == here.returncode == 2, on_workers.stderr
    line = "error: encoding 'plugin_encodings:RaisesAtRunTime' raised RuntimeError in attention_bias(q, k): only three"
    assert on_workers.stderr == here.stderr == f"{line} slots\n"
    assert on_workers.stdout == "" and not (tmp_path / "out" / "plugged").exists()
