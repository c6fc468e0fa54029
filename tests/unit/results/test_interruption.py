"""Nothing is lost: a run stopped by a signal or an exception leaves the previous results folder byte-identical."""

from __future__ import annotations

import errno
import os
import signal
from pathlib import Path

import pytest
from stalling import snapshot, start_stalled
from typer.testing import CliRunner

from orderlab.cli import app
from orderlab.measure import loop as streaming
from orderlab.results import folder as results
from orderlab.results import run_writer as experiment
from orderlab.results.paths import NEW


def previous_results(out: Path, name: str) -> dict[str, bytes]:
    """A results folder as an earlier orderlab wrote it (its manifest names the spec), so a run may replace it."""
    folder = out / name
    folder.mkdir(parents=True)
    (folder / "metrics.csv").write_text("case,input\nprevious,run\n")
    (folder / "summary.csv").write_text("previous summary\n")
    spec = f'{{"name": "{name}", "sha256": "{"0" * 64}"}}'  # every manifest orderlab wrote records the spec's hash
    (folder / "manifest.json").write_text(f'{{"spec": {spec}, "previous": true}}\n')
    return snapshot(out)


@pytest.mark.parametrize("command", [["run"], ["check", "--update"]], ids=["run", "check-update"])
@pytest.mark.parametrize(
    ("signum", "exit_code", "message"),
    [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")],
    ids=["SIGINT", "SIGTERM"],
)
@pytest.mark.slow
def test_signal_mid_run_leaves_previous_results_byte_identical_and_no_staging(
    tmp_path: Path, command: list[str], signum: int, exit_code: int, message: str
):
    out = tmp_path / "results"
    before = previous_results(out, "stalled")
    option = ["--out", str(out)] if command == ["run"] else ["--results", str(out)]
    process = start_stalled(tmp_path, [*command, "stalled.yaml", *option])
    try:
        process.send_signal(signum)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == exit_code, stderr.decode()
    assert stderr.decode() == f"{message}: no results were written\n"
    assert snapshot(out) == before  # hidden leftovers (staging, .old, .lock) included


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
    write_csv = experiment.write_csv

    def write_one_then_fail(frame, path):
        write_csv(frame, path)
        if path.name == "summary.csv":
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(experiment, "write_csv", write_one_then_fail)
    result = run_small()
    assert result.exit_code == 2
    assert result.output == "error: cannot write results/small: No space left on device; nothing was changed\n"
    assert snapshot(project / "results") == before


def test_failure_while_swapping_folders_puts_the_previous_results_back(project: Path, monkeypatch):
    before = previous_results(project / "results", "small")
    replace = os.replace

    def refuse_the_new_folder(source, destination):
        if Path(source).name == NEW:  # the second rename: the staged folder -> destination
            raise OSError(errno.EIO, "Input/output error")
        replace(source, destination)

    monkeypatch.setattr(results.os, "replace", refuse_the_new_folder)
    result = run_small()
    assert result.exit_code == 2
    assert result.output == "error: cannot write results/small: Input/output error; nothing was changed\n"
    assert snapshot(project / "results") == before


def test_successful_run_replaces_the_folder_whole_and_leaves_no_temporary_files(project: Path):
    previous_results(project / "results", "small")
    assert run_small().exit_code == 0
    assert sorted(p.name for p in (project / "results").iterdir()) == ["small"]
    assert sorted(p.name for p in (project / "results" / "small").iterdir()) == [
        "attention.csv",
        "manifest.json",
        "metrics.csv",
        "orders.csv",
        "summary.csv",
    ]


@pytest.mark.slow
def test_an_interrupted_report_write_leaves_the_previous_file_and_no_staging_file(project: Path, monkeypatch):
    from orderlab.results import artifact

    results = project / "results"
    assert run_small().exit_code == 0
    (project / "report.html").write_text("the previous report\n")

    def interrupted(source, destination):
        raise KeyboardInterrupt

    monkeypatch.setattr(artifact.os, "replace", interrupted)
    result = CliRunner().invoke(app, ["report", str(results / "small"), "--out", "report.html"])
    assert result.exit_code == 130
    assert (project / "report.html").read_text() == "the previous report\n"
    assert sorted(p.name for p in project.iterdir()) == ["report.html", "results", "spec.yaml"]
