"""benchmarks/bench_zoo.py's 16-bit sides at a tiny shape: a run with states is timed beside itself with
`escalate: false` (like for like with the plain loop), so that the figure the docs quote cannot rot (the GPU check's
dry run benches float32 only)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
import torch

from orderlab.spec.extras import installed

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not installed("transformers"), reason="needs the optional extra: orderlab[hf]"),
]


@pytest.fixture
def bench_zoo(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import bench_zoo

    monkeypatch.setitem(bench_zoo.SHAPE, "d_model", 32)
    monkeypatch.setitem(bench_zoo.SHAPE, "n_heads", 2)
    monkeypatch.setitem(bench_zoo.SHAPE, "n_layers", 2)
    yield bench_zoo
    sys.modules.pop("bench_zoo", None)


def test_a_16_bit_run_with_states_is_timed_with_and_without_escalation(bench_zoo, tmp_path):
    case = bench_zoo.Case("gpt2", 5, 24, tmp_path, torch.device("cpu"), "bfloat16")
    figures = bench_zoo.measure(case, rounds=1)
    assert {"orderlab_loop_unescalated", "orderlab_end_to_end_unescalated"} <= set(
        figures["speedup_over_best_plain_loop"]
    )

    def remeasured(folder: str) -> int:
        manifest = json.loads((tmp_path / "out" / folder / "manifest.json").read_text())
        return int(manifest["resolution"]["conditions"]["seeded"]["remeasured"])

    name = case.loaded.spec.name
    assert remeasured(name) > 0 and remeasured(f"{name}_unescalated") == 0  # the one side re-measures, the other not
    lm_only = bench_zoo.Case("gpt2", 5, 24, tmp_path, torch.device("cpu"), "bfloat16", lm_only=True)
    float32 = bench_zoo.Case("gpt2", 5, 24, tmp_path, torch.device("cpu"))
    assert lm_only.unescalated is None and float32.unescalated is None  # nothing to compare like for like


def test_the_encoders_misses_are_explained_by_the_bert_runs_own_profile(bench_zoo, tmp_path):
    prof = bench_zoo.profile(bench_zoo.Case("bert", 5, 24, tmp_path, torch.device("cpu")))
    stages = {k: v for k, v in prof["stages"].items() if k != "of which the metrics"}  # a part of the chunks' share
    assert sum(stages.values()) == pytest.approx(1) and stages["building the seeded model"] > 0
    assert prof["loop_ops"]["matmuls"] > 0 and sum(prof["loop_ops"].values()) == pytest.approx(1)
    plain = {"matmul_share": 0.9, "matmul_gflops": 100.0, "fraction_of_peak": 0.8, "gemm_peak_gflops": 125.0}
    causes = bench_zoo.encoder_causes({"profile_bert": prof, "plain_bert_matmuls": plain, "dtype": "float32"}, 1.0)
    end_to_end, loop = (causes[f"encoder (bert) {what} the best plain loop"]
                        for what in ("end to end >= 0.95x", "measuring loop >= 1.2x"))  # fmt: skip
    assert bench_zoo.shares_line(prof["stages"]) in end_to_end and "BERT run" in end_to_end
    assert bench_zoo.shares_line(prof["loop_ops"]) in loop and "BERT loop" in loop and "twin's float64" in loop
    assert bench_zoo.encoder_causes({}, load=1.0) == {}  # no BERT measured: no encoder target to explain


def test_a_causal_familys_misses_are_explained_by_its_own_profile(bench_zoo, tmp_path):
    profiles = {f"profile_{f}": bench_zoo.profile(bench_zoo.Case(f, 4, 24, tmp_path, torch.device("cpu")))
                for f in ("gpt2", "llama")}  # fmt: skip
    entry = {"token_states_dense": 9216, "token_states_shared": 2787, "chunk_size": 1024, "plan_over_measured": 1.0,
             "speedup_over_best_plain_loop": {"orderlab_loop": 2.0, "orderlab_end_to_end": 1.5}}  # fmt: skip
    missed = ["llama with states >= 2.7x the best plain loop at 8 words (loop)",
              "llama with states >= 2.0x the best plain loop at 8 words (end to end)"]  # fmt: skip
    figures = {"dtype": "float32", "device": "cpu", "load_average_at_start": [1.0], "load_average_at_end": [1.0],
               "twin": {"twin_pass_in_small_passes": 1.0, "twin_weights_mb": 1.0, "twin_borrowed_pass_seconds": 0.1,
                        "twin_copy_made_seconds": 0.1},
               "gpt2": {"8_words": entry}, "llama": {"8_words": entry}, **profiles,
               "targets": dict.fromkeys(missed, False)}  # fmt: skip
    loop, end_to_end = bench_zoo.explain_gaps(figures)
    llama = profiles["profile_llama"]
    assert llama["loop_matmuls_of_one_row_tile"] > 0  # its linears have no bias: aten::mm, counted too
    assert "over the Llama loop" in loop and bench_zoo.shares_line(llama["loop_ops"]) in loop
    assert "of the Llama run" in end_to_end and bench_zoo.shares_line(llama["stages"]) in end_to_end


def test_a_matmul_of_one_row_tile_is_found_with_or_without_a_bias(bench_zoo):
    assert bench_zoo.one_row_tile("aten::addmm", [[768], [16, 768], [768, 3072]])
    assert bench_zoo.one_row_tile("aten::mm", [[16, 768], [768, 3072]])  # a linear without a bias (Llama's)
    assert not bench_zoo.one_row_tile("aten::mm", [[32, 768], [768, 3072]])
    assert not bench_zoo.one_row_tile("aten::addmm", [[768], [1024, 768], [768, 3072]])
    assert not bench_zoo.one_row_tile("aten::bmm", [[16, 1, 64], [16, 64, 9]])


def test_the_peak_rss_probe_reads_the_peak_chunk_by_chunk_and_explains_a_miss_from_it(bench_zoo, tmp_path):
    small, large = (bench_zoo.peak_rss("gpt2", 5, orders, tmp_path, "cpu", "float32", 8) for orders in (16, 32))
    assert len(small["peak_mb_by_chunk"]) == 2 and len(large["peak_mb_by_chunk"]) == 4  # one reading a chunk
    by_chunk = large["peak_mb_by_chunk"]
    assert by_chunk == sorted(by_chunk) and large["after_imports_mb"] < by_chunk[0] <= large["peak_mb"]
    assert bench_zoo.growth_in_run(large) == large["peak_mb"] - by_chunk[1]  # from the half's chunk to the end
    large["token_states_by_chunk"] = [30, 31, 30, 32]
    figures = {"peak_rss": [small, large], "rss_growth_in_run_mb": bench_zoo.growth_in_run(large)}
    cause = bench_zoo.rss_cause(figures)
    assert ", ".join(f"{peak:.0f}" for peak in by_chunk) in cause and "walk 30-32 token states each" in cause
    assert f"grew {figures['rss_growth_in_run_mb']:.0f} MB from its 4th chunk" in cause
    assert f"peaked {large['peak_mb'] - small['peak_mb']:.0f} MB apart" in cause


def test_orders_too_many_to_list_in_a_spec_are_probed_as_all_the_sentences_orders(bench_zoo, tmp_path, monkeypatch):
    listed = bench_zoo.peak_rss("gpt2", 5, 16, tmp_path, "cpu", "float32", 8)
    monkeypatch.setattr(bench_zoo, "MAX_SPEC_BYTES", 200)  # a card's chunks: 16,384 listed orders took 464 KiB
    everything = bench_zoo.peak_rss("gpt2", 5, 16, tmp_path, "cpu", "float32", 60)
    assert listed["orders"] == 16 and everything["orders"] == 120 and len(everything["peak_mb_by_chunk"]) == 2


def test_a_target_the_bench_did_not_measure_is_neither_met_nor_missed(bench_zoo):
    entry = {"speedup_over_best_plain_loop": {"orderlab_loop": 2.0, "orderlab_end_to_end": 1.5},
             "plan_over_measured": 1.0}  # fmt: skip
    figures = {"dtype": "float32", "device": "cpu", "gpt2": {"8_words": entry},
               "twin": {"twin_pass_in_small_passes": 1.0},
               "rss_growth_mb": 150.0, "rss_growth_in_run_mb": 20.0}  # fmt: skip
    targets = bench_zoo.check_targets(figures)
    assert not any("bert" in target for target in targets)  # no BERT measured: no verdict on it
    assert targets["gpt2 with states >= 2.7x the best plain loop at 8 words (loop)"] is False
    assert targets["peak RSS flat in the number of orders (< 100 MB growth for 2x the orders)"]  # judged in one run
    with_bert = bench_zoo.check_targets(figures | {"bert": {"8_words": entry}})
    assert with_bert["encoder (bert) end to end >= 0.95x the best plain loop"] is True


def test_a_stage_called_within_another_is_its_own_time_alone(bench_zoo):
    """stage_shares' clock: a stage's share leaves out the stages it calls (the twin's copy is made within a pass),
    so that the shares add up to the run and "everything else" is what no stage names."""
    spent, nested = {"outer": 0.0, "inner": 0.0}, []
    inner = bench_zoo.clocked(lambda: time.sleep(0.1), "inner", spent, nested)

    def body() -> None:
        time.sleep(0.02)
        inner()
        inner()

    outer = bench_zoo.clocked(body, "outer", spent, nested)
    took = bench_zoo.timed(outer)
    assert spent["inner"] >= 0.2 and 0.02 <= spent["outer"] < spent["inner"]
    assert spent["outer"] + spent["inner"] == pytest.approx(took, abs=0.01) and nested == []
