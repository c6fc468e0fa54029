"""The command line's process ends without the interpreter collecting every object the command made
(report/command_line.run_as_process freezes them: 1.4 s after a zoo run, benchmarks/bench_exit.py), and ends as
before: its exit code, its output, its atexit hooks and its files all as they were."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from command_line import ROOT, python

# A child that reports, from an atexit hook (registered first, so run last), whether the command froze its objects.
CHILD = """
import atexit, gc, sys
atexit.register(lambda: print("frozen at exit:", gc.get_freeze_count() > 0, flush=True))
sys.argv = ["orderlab", *sys.argv[1:]]
from orderlab.cli import main
main()
"""


def test_a_command_freezes_what_it_made_and_keeps_its_exit_code_and_output(tmp_path: Path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\n")  # no model, no inputs
    refused = python("-c", CHILD, "validate", bad)
    assert refused.returncode == 2 and refused.stderr.startswith("error: "), refused.stderr
    assert "frozen at exit: True" in refused.stdout  # frozen on the way out of an error, too
    valid = python("-c", CHILD, "validate", ROOT / "experiments" / "dog_bites_man.yaml")
    assert valid.returncode == 0, valid.stderr
    assert "frozen at exit: True" in valid.stdout and "dog_bites_man" in valid.stdout


@pytest.mark.slow
def test_a_run_ends_frozen_with_its_folder_whole(tmp_path: Path):
    done = python("-c", CHILD, "run", ROOT / "experiments" / "worked_example.yaml", "--out", tmp_path, "-q")
    assert done.returncode == 0, done.stderr
    assert "frozen at exit: True" in done.stdout
    folder = tmp_path / "worked_example"
    assert {"metrics.csv", "summary.csv", "manifest.json"} <= {p.name for p in folder.iterdir()}
    assert json.loads((folder / "manifest.json").read_text())["spec"]  # written whole before the process ended


@pytest.mark.slow
def test_the_exit_bench_times_both_sides_of_the_shutdown(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import bench_exit

    try:
        figures = bench_exit.measure(ROOT / "experiments" / "worked_example.yaml", rounds=1)
    finally:
        sys.modules.pop("bench_exit", None)
    for side in ("frozen", "collected"):
        run = figures["medians"][side]
        assert 0 < run["shutdown_seconds"] < run["total_seconds"]
    assert figures["total_collected_over_frozen"] > 0
