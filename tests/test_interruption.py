"""Nothing is lost: a run stopped by Ctrl-C or an exception leaves the previous results folder byte-identical."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from orderlab import results, streaming
from orderlab.cli import app

ROOT = Path(__file__).resolve().parents[1]

# A user encoding (loaded as `stall_encoding:Stall`) that announces the run has reached the forward
# pass by creating a file, then waits there, so the test interrupts mid-run on any machine speed.
STALL_MODULE = """
import os, pathlib, time
from orderlab.encodings.base import PositionalEncoding

class Stall(PositionalEncoding):
    name, kind, relative, reference = "stall", "none", False, "test only"

    def input_offsets(self, n):
        pathlib.Path(os.environ["ORDERLAB_TEST_STARTED"]).touch()
        time.sleep(120)
"""
STALL_SPEC = """
name: stalled
encodings: [none, "stall_encoding:Stall"]
inputs: [{sentence: dog bites man}]
"""


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under root (hidden leftovers included) with its bytes."""
    return {str(p.relative_to(root)): p.read_bytes() if p.is_file() else b"<dir>" for p in sorted(root.rglob("*"))}


def previous_results(out: Path, name: str) -> dict[str, bytes]:
    folder = out / name
    folder.mkdir(parents=True)
    (folder / "metrics.csv").write_text("case,input\nprevious,run\n")
    (folder / "summary.csv").write_text("previous summary\n")
    (folder / "manifest.json").write_text('{"previous": true}\n')
    return snapshot(out)


@pytest.mark.parametrize("command", [["run"], ["check", "--update"]], ids=["run", "check-update"])
def test_sigint_mid_run_leaves_previous_results_byte_identical(tmp_path: Path, command: list[str]):
    (tmp_path / "stall_encoding.py").write_text(STALL_MODULE)
    spec = tmp_path / "stalled.yaml"
    spec.write_text(STALL_SPEC)
    out = tmp_path / "results"
    before = previous_results(out, "stalled")
    started = tmp_path / "started"
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "ORDERLAB_TEST_STARTED": str(started)}
    args = [sys.executable, "-m", "orderlab", *command, str(spec)]
    args += ["--out", str(out)] if command == ["run"] else ["--results", str(out)]
    process = subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not started.exists():
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the run never reached the forward pass"
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, stderr.decode()
    assert "interrupted: no results were written" in stderr.decode()
    assert "Traceback" not in stderr.decode()
    assert snapshot(out) == before


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "spec.yaml").write_text("name: small\ninputs: [{sentence: dog bites man}]\n")
    return tmp_path


def run_small() -> object:
    return CliRunner().invoke(app, ["run", "spec.yaml", "--out", "results", "--quiet"])


def test_exception_while_computing_leaves_previous_results_byte_identical(project: Path, monkeypatch):
    before = previous_results(project / "results", "small")

    record = streaming.record_metrics
    calls = []

    def fail_on_the_second_chunk(*args, **kwargs):  # the first chunk's rows are in the staging CSV by then
        calls.append(1)
        if len(calls) > 1:
            raise RuntimeError("boom in the middle of the run")
        record(*args, **kwargs)

    monkeypatch.setattr(streaming, "record_metrics", fail_on_the_second_chunk)
    result = run_small()
    assert isinstance(result.exception, RuntimeError) and len(calls) == 2
    assert snapshot(project / "results") == before


def test_exception_between_two_csvs_leaves_previous_results_byte_identical(project: Path, monkeypatch):
    before = previous_results(project / "results", "small")
    write_csv = results.write_csv

    def write_one_then_fail(frame, path):
        write_csv(frame, path)
        if path.name == "summary.csv":
            raise OSError("disk full")

    monkeypatch.setattr(results, "write_csv", write_one_then_fail)
    result = run_small()
    assert isinstance(result.exception, OSError)
    assert snapshot(project / "results") == before


def test_failure_while_swapping_folders_puts_the_previous_results_back(project: Path, monkeypatch):
    before = previous_results(project / "results", "small")
    replace = os.replace

    def refuse_the_new_folder(source, destination):
        if Path(source).name.endswith(".tmp"):  # the second rename: staging -> destination
            raise OSError("rename failed")
        replace(source, destination)

    monkeypatch.setattr(results.os, "replace", refuse_the_new_folder)
    result = run_small()
    assert isinstance(result.exception, OSError)
    assert snapshot(project / "results") == before


def test_successful_run_replaces_the_folder_whole_and_leaves_no_temporary_files(project: Path):
    previous_results(project / "results", "small")
    assert run_small().exit_code == 0
    assert sorted(p.name for p in (project / "results").iterdir()) == ["small"]
    assert sorted(p.name for p in (project / "results" / "small").iterdir()) == [
        "attention.csv",
        "manifest.json",
        "metrics.csv",
        "summary.csv",
    ]
