"""benchmarks/bench_build.py at a tiny shape: the three ways of building timed per family and dtype (whole runs the
two that keep draws), the draws skipped counted, and the figures land beside the file's other keys."""

from __future__ import annotations

import pytest
from bench_scripts import bench_figures

from orderlab.spec.extras import installed

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not installed("transformers"), reason="needs the optional extra: orderlab[hf]"),
]


def test_every_way_of_building_is_timed_and_the_file_keeps_its_other_keys(tmp_path):
    args = [
        "--rounds",
        "2",
        "--families",
        "gpt2",
        "bert",
        "--dtypes",
        "float32",
        "bfloat16",
        "--shape",
        "32,2,2",
        "--end-to-end",
        "12",
    ]
    written = bench_figures("bench_build.py", args, tmp_path)["seeded_build"]
    for case in ("gpt2_float32", "gpt2_bfloat16", "bert_float32", "bert_bfloat16"):
        figures = written[case]
        assert set(figures["rounds"]) == {"every_draw", "kept_draws_one_thread", "kept_draws"}
        assert all(len(times) == 2 and min(times) > 0 for times in figures["rounds"].values())
        assert figures["outputs_skipped"] > figures["weights"] // 4 > 0  # the overwritten draws were not drawn
        speedup = figures["speedup"]
        assert set(speedup) == {"kept_draws_one_thread", "kept_draws"} and min(speedup.values()) > 0
        run = figures["end_to_end"]
        assert run["orders"] == 12 and set(run["rounds"]) == {"kept_draws_one_thread", "kept_draws"}
        assert all(len(times) == 2 and min(times) > 0 for times in run["rounds"].values())
