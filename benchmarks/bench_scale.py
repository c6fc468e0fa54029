"""Scale-out: a 9! sweep (362,880 orders of a 9-word sentence) in one process, on 1 Dask worker and on 2.

Each Dask run is `orderlab run --workers N` end to end (orderlab/cluster/workers.py): local cluster start-up,
shards, merge. The workers get one torch thread each (the client runs with one, which workers copy), so
1 vs 2 workers measures scale-out alone on this 2-core machine; the in-process run uses torch's default
threads, for reference. Efficiency = T(1 worker) / (2 x T(2 workers)). The machine is shared: the load
average before and after each timing is recorded, and each timing is one run (a few minutes in all).

    python benchmarks/bench_scale.py    # writes the "scale" key of benchmarks/results.json, prints the figures
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch

from orderlab.cluster.workers import run_on_dask
from orderlab.commands.run import write_experiment
from orderlab.spec.load import load_spec

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results.json"
SPEC = """
name: scale_9
seed: 0
model: {d_model: 32, n_heads: 2, n_layers: 2, dtype: float32}
encodings: [none]
rows: summary
inputs:
  - sentence: the old dog bit the young man in town
    permutations: all
metrics: [equivariance, invariance]
"""


def timed(label: str, run: Callable[[], object]) -> dict[str, object]:
    before = os.getloadavg()
    started = time.perf_counter()
    run()
    seconds = time.perf_counter() - started
    print(f"{label:>28}: {seconds:6.1f} s  (load average before {before[0]:.2f})")
    return {"seconds": seconds, "load_average_before": list(before), "load_average_after": list(os.getloadavg())}


def main() -> None:
    default_threads = torch.get_num_threads()
    with tempfile.TemporaryDirectory() as root:
        spec_path = Path(root) / "scale_9.yaml"
        spec_path.write_text(SPEC)
        loaded = load_spec(spec_path)
        single = Path(root) / "single" / "scale_9"
        figures = {
            "in_process": timed(f"in process, {default_threads} threads", lambda: write_experiment(loaded, single))
        }
        torch.set_num_threads(1)  # what the workers copy: one thread each
        for workers in (1, 2):
            out = Path(root) / f"workers{workers}"
            label = f"{workers} worker(s), 1 thread each"
            figures[f"workers_{workers}"] = timed(label, lambda out=out, n=workers: run_on_dask(loaded, out, n))
        torch.set_num_threads(default_threads)
        same = all(
            (Path(root) / f"workers{n}" / "scale_9" / name).read_bytes()
            == (Path(root) / "workers1" / "scale_9" / name).read_bytes()
            for n in (2,) for name in ("metrics.csv", "summary.csv")
        )  # fmt: skip
    one, two = figures["workers_1"]["seconds"], figures["workers_2"]["seconds"]
    assert isinstance(one, float) and isinstance(two, float)
    scale = {
        "spec": SPEC.strip(),
        "permutations": 362_880,
        "cores": os.cpu_count(),
        **figures,
        "speedup_2_over_1_worker": one / two,
        "efficiency_2_workers": one / (2 * two),
        "two_workers_same_csvs_as_one": same,
        "note": "one run each on a shared 2-core machine; wall time includes local cluster start-up and the merge",
    }
    print(f"speed-up 2 vs 1 worker: {one / two:.2f}x, efficiency {one / (2 * two):.0%}, same CSVs: {same}")
    document = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    document["scale"] = scale  # only this key: bench_sweep.py owns the others
    RESULTS.write_text(json.dumps(document, indent=2) + "\n")


if __name__ == "__main__":
    main()
