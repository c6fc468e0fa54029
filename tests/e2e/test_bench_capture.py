"""benchmarks/bench_capture.py at a tiny shape under dynamo's eager backend: every way timed, the captured run's
numbers the walk's bit for bit, and the figures land beside the file's other keys."""

from __future__ import annotations

import pytest
from bench_scripts import bench_figures

from orderlab.spec.extras import installed

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not installed("transformers"), reason="needs the optional extra: orderlab[hf]"),
]


def test_each_way_is_timed_and_the_captured_run_agrees_with_the_walk(tmp_path):
    args = ["--backend", "eager", "--orders", "24", "--words", "4", "--shape", "32,2,2"]
    figures = bench_figures("bench_capture.py", args, tmp_path)["walk_capture"]
    assert list(figures["runs"]) == ["walked", "captured", "captured_again", "walked_again"]
    assert all(run["seconds"] > 0 for run in figures["runs"].values())
    assert figures["runs"]["walked"]["torch_compile"] is None
    assert figures["runs"]["captured_again"]["torch_compile"][0]["capture"] == "eager"
    assert figures["agreement"]["bit_for_bit"] and figures["agreement"]["same_verdicts"]  # eager: the model's ops
    assert figures["replay_speedup_over_the_walk"] > 0
