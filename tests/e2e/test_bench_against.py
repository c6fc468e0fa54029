"""benchmarks/bench_against.py at a tiny shape, against this checkout's own commit: both sides run, each in its own
processes on its own code, and the figures land beside the file's other keys."""

from __future__ import annotations

import math
import subprocess
from pathlib import Path

import pytest
from bench_scripts import bench_figures

from orderlab.spec.extras import installed

ROOT = Path(__file__).resolve().parents[2]


def head() -> str | None:
    done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else None


pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not installed("transformers"), reason="needs the optional extra: orderlab[hf]"),
    pytest.mark.skipif(head() is None, reason="needs a git checkout"),
]


def test_both_sides_are_timed_on_their_own_code_and_the_file_keeps_its_other_keys(tmp_path):
    written = bench_figures("bench_against.py", ["--base", "HEAD", "--families", "gpt2", "--words", "4", "--orders",
                                                 "24", "--shape", "32,2,2", "--rounds", "2", "--repeats", "1"],
                            tmp_path)  # fmt: skip
    figures = written["against_base"]["float32"]
    assert figures["base"] == head() and figures["this_checkout"].startswith(head())
    for side in ("base", "this_checkout"):
        runs = figures["gpt2"][side]
        assert len(runs) == 2
        for what in ("loop", "end_to_end"):
            assert all(math.isfinite(r[f"{what}_over_plain_loop"]) and r[f"{what}_seconds"] > 0 for r in runs)
            assert figures["gpt2"][f"{side}_{what}_over_plain_loop"] > 0
    assert figures["gpt2"]["base_loop_over_this_loop"] > 0
    assert figures["gpt2"]["base_end_to_end_over_this_end_to_end"] > 0
    assert figures["gpt2"]["base_twin_first_pass_over_this_twin_first_pass"] > 0
    assert all(r["twin_first_pass_seconds"] > 0 for side in ("base", "this_checkout") for r in figures["gpt2"][side])


def test_twin_only_times_the_twins_first_pass_alone_under_a_key_of_its_own(tmp_path):
    written = bench_figures("bench_against.py", ["--base", "HEAD", "--families", "llama", "--words", "4", "--shape",
                                                 "32,2,2", "--rounds", "1", "--twin-only"], tmp_path)  # fmt: skip
    assert set(written["against_base"]) == {"float32_twin_only"}
    figures = written["against_base"]["float32_twin_only"]["llama"]
    for side in ("base", "this_checkout"):
        (run,) = figures[side]
        assert run["twin_first_pass_seconds"] > 0 and "loop_seconds" not in run
    assert figures["base_twin_first_pass_over_this_twin_first_pass"] > 0
