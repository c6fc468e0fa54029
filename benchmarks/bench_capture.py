"""A causal LM's walk with its calls captured by torch.compile (ORDERLAB_CAPTURE, models/hf/capture.py) against the
walk as every committed result runs it, on this machine.

One seeded GPT-2-shaped model (12 layers, d_model 768, 12 heads; --shape), one 8-word sentence, its first --orders
reorderings, one ablation, states and log-probabilities (equivariance, invariance, lm_logprob), each run a whole
`orderlab run` in this process: walked, captured, captured again (the first compiles, the second replays the graphs
a run keeps for the process), walked again. The captured run's metrics.csv beside the walk's: the largest
difference over the largest value, and whether every verdict is the same. Writes its figures under "walk_capture" in
benchmarks/results.json with the load average, leaving the file's other keys as they are. The compiler's caches on
disk (inductor's) make the first captured run's time depend on what ran before: both are recorded as measured.

    python benchmarks/bench_capture.py [--backend inductor] [--orders 1024] [--words 8] [--shape 768,12,12]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any
from unittest import mock

import pandas as pd
import torch
from bench_zoo import save  # a sibling script (the script's folder is on the path): its writer
from gpu_check import WORDS, written_spec

WAYS = (("walked", "off"), ("captured", None), ("captured_again", None), ("walked_again", "off"))


def timed_runs(backend: str, words: int, orders: int, shape: tuple[int, int, int], folder: Path) -> dict[str, Any]:
    """Each of WAYS as one `orderlab run` (None: the backend), its seconds and manifest's torch_compile, in order."""
    from orderlab.commands.run import write_experiment
    from orderlab.measure.run_options import RunOptions

    d_model, heads, layers = shape
    first = [list(order) for order in itertools.islice(itertools.permutations(range(words)), orders)]
    spec = {"name": "bench_capture", "seed": 0, "rows": "summary",
            "metrics": ["equivariance", "invariance", "lm_logprob"],
            "model": {"kind": "hf", "family": "gpt2", "d_model": d_model, "n_heads": heads, "n_layers": layers,
                      "dtype": "float32", "position_embeddings": ["trained"]},
            "inputs": [{"sentence": " ".join(WORDS[:words]), "permutations": first}]}  # fmt: skip
    loaded = written_spec(spec, folder / "spec.yaml")
    runs = {}
    for way, setting in WAYS:
        with mock.patch.dict(os.environ, {"ORDERLAB_CAPTURE": setting or backend}):
            started = time.perf_counter()
            write_experiment(loaded, folder / way, RunOptions(torch.device("cpu"), force=True))
            seconds = time.perf_counter() - started
        manifest = json.loads((folder / way / "manifest.json").read_text())
        runs[way] = {"seconds": seconds, "torch_compile": manifest.get("torch_compile")}
        print(f"{way:15} {seconds:7.2f} s  {manifest.get('torch_compile') or ''}", flush=True)
    return runs


def agreement(folder: Path) -> dict[str, Any]:
    """The captured run's metrics.csv against the walk's: round-off and verdicts."""
    walked, captured = (pd.read_csv(folder / way / "metrics.csv") for way in ("walked", "captured"))
    scale = float(walked["value"].abs().max())
    return {"rows": len(walked), "bit_for_bit": bool(walked["value"].equals(captured["value"])),
            "max_difference_over_largest_value": float((walked["value"] - captured["value"]).abs().max()) / scale,
            "same_verdicts": walked["verdict"].tolist() == captured["verdict"].tolist()}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="inductor", help="ORDERLAB_CAPTURE's torch.compile backend")
    parser.add_argument("--orders", type=int, default=1024)
    parser.add_argument("--words", type=int, default=8)
    parser.add_argument("--shape", default="768,12,12", help="d_model,heads,layers")
    parser.add_argument("--results", type=Path, default=Path(__file__).with_name("results.json"))
    args = parser.parse_args()
    shape = tuple(int(part) for part in args.shape.split(","))
    assert len(shape) == 3, "--shape is d_model,heads,layers"
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as scratch:
        runs = timed_runs(args.backend, args.words, args.orders, (shape[0], shape[1], shape[2]), Path(scratch))
        agreed = agreement(Path(scratch))
    figures = {"backend": args.backend, "words": args.words, "orders": args.orders, "shape": args.shape,
               "torch": torch.__version__, "torch_threads": torch.get_num_threads(), "runs": runs,
               "replay_speedup_over_the_walk": runs["walked_again"]["seconds"] / runs["captured_again"]["seconds"],
               "agreement": agreed, "load_average_at_start": load_before,
               "load_average_at_end": os.getloadavg()}  # fmt: skip
    print(f"replayed: {figures['replay_speedup_over_the_walk']:.2f}x the walk; {agreed}")
    save(args.results, "walk_capture", figures)


if __name__ == "__main__":
    main()
