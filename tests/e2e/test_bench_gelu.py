"""benchmarks/bench_gelu.py at a tiny shape: both GELUs timed in the walked and the dense loop, the GELU modules'
own seconds counted, and the figures land beside the file's other keys."""

from __future__ import annotations

import pytest
from bench_scripts import bench_figures

from orderlab.spec.extras import installed

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not installed("transformers"), reason="needs the optional extra: orderlab[hf]"),
]


def test_both_gelus_are_timed_in_both_loops_and_the_file_keeps_its_other_keys(tmp_path):
    args = ["--rounds", "2", "--orders", "24", "--words", "4", "--shape", "32,2,2"]
    written = bench_figures("bench_gelu.py", args, tmp_path)
    for loop in ("walked", "dense"):
        figures = written["inplace_gelu"][loop]
        assert all(len(times) == 2 and min(times) > 0 for times in figures["rounds"].values())
        assert all(seconds > 0 for seconds in figures["gelu_seconds"].values())  # the clock saw both ways run
        assert figures["loop_speedup"] > 0
