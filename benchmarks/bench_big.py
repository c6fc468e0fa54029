"""Billions of parameters in bfloat16: a Llama-3-shaped seeded model's 5-word sentence, all 120 orders, lm_logprob.

Each row writes a spec (kind hf, family llama, seeded, dtype bfloat16, the 120 orders of "the old dog chased
cats", metrics [lm_logprob]), prices it with `validate --plan`'s estimate (peak memory and time), then runs
`orderlab run` on it in a fresh process, as a user would, and records that process's wall time and peak RSS
(VmHWM, from /proc/self/status as it exits). Rows:
  - 8b: Llama-3-8B's shape (hidden 4096, 32 layers, 32 heads, 8 key-value heads, feed-forward 14,336, vocabulary
    128,256): about 16 GB of bfloat16 weights; it needs the whole 24 GB machine to itself, so it runs only when
    asked for (--rows 8b);
  - 1b: Llama-3.2-1B's shape (hidden 2048, 16 layers, 32 heads, 8 key-value heads, feed-forward 8,192, vocabulary
    128,256; untied head, as every seeded Llama);
  - tiny: the same code path at a toy size (hidden 64, 2 layers), to show it works in seconds.
The weights are drawn straight in bfloat16 and the round-off twin borrows them (models/hf/loader.py), so the peak is
the model, one widened vocabulary table and the passes. Writes its rows under "big" in benchmarks/results.json,
leaving the file's other keys (and rows it did not run) as they are. The machine may be shared: the load average is
recorded beside every figure.

    python benchmarks/bench_big.py [--rows tiny,1b] [--rows 8b]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results.json"
SENTENCE = "the old dog chased cats"  # 5 words: 120 orders
LLAMA_3 = {"n_kv_heads": 8, "vocab_size": 128_256}
SHAPES: dict[str, dict[str, int]] = {
    "8b": {"d_model": 4096, "n_layers": 32, "n_heads": 32, "d_ffn": 14_336, **LLAMA_3},
    "1b": {"d_model": 2048, "n_layers": 16, "n_heads": 32, "d_ffn": 8192, **LLAMA_3},
    "tiny": {"d_model": 64, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2, "d_ffn": 224, "vocab_size": 1000},
}


def spec_text(row: str) -> str:
    model = {"kind": "hf", "family": "llama", **SHAPES[row], "position_embeddings": ["trained"], "dtype": "bfloat16"}
    spec = {
        "name": f"big_{row}",
        "description": f"A Llama-3-shaped seeded model ({row}) in bfloat16: which orders does its LM head prefer?",
        "model": model,
        "inputs": [{"sentence": SENTENCE, "permutations": "all"}],
        "metrics": ["lm_logprob"],
    }
    return yaml.safe_dump(spec, sort_keys=False)


def parameters(row: str) -> int:
    shape = SHAPES[row]
    d, ffn, layers, vocab = shape["d_model"], shape["d_ffn"], shape["n_layers"], shape["vocab_size"]
    keys = shape["n_kv_heads"] * d // shape["n_heads"]
    return layers * (2 * d * d + 2 * d * keys + 3 * d * ffn) + 2 * vocab * d


def peak_rss_bytes() -> int:
    """This process's peak resident set (VmHWM), in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def child(spec: Path, out: Path) -> None:
    """The run itself, in this fresh process: `orderlab run`'s code path; prints its wall time and peak RSS."""
    from orderlab.commands.run import write_experiment
    from orderlab.spec.load import load_spec

    started = time.perf_counter()
    loaded = load_spec(spec)
    outcome = write_experiment(loaded, out / loaded.spec.name)
    print(json.dumps({"seconds": time.perf_counter() - started, "peak_rss_bytes": peak_rss_bytes(),
                      "rows": outcome.rows}))  # fmt: skip


def measure(row: str, folder: Path) -> dict[str, Any]:
    from orderlab.plan.cost import run_seconds
    from orderlab.plan.estimate import estimate
    from orderlab.spec.load import load_spec

    spec = folder / f"big_{row}.yaml"
    spec.write_text(spec_text(row))
    estimates = estimate(load_spec(spec).spec, spec)
    load = os.getloadavg()[0]
    command = [sys.executable, __file__, "--child", str(spec), "--out", str(folder / "results")]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{row}: orderlab run failed:\n{done.stderr[-2000:]}")
    ran = json.loads(done.stdout.strip().splitlines()[-1])
    return {
        "shape": SHAPES[row],
        "dtype": "bfloat16",
        "parameters": parameters(row),
        "orders": 120,
        "plan_seconds": round(run_seconds(estimates), 1),
        "plan_peak_bytes": round(max(e.peak_bytes for e in estimates)),
        "seconds": round(ran["seconds"], 1),  # load_spec, building the model, the run, the folder written
        "process_seconds": round(wall, 1),  # the same, with the interpreter's start and imports
        "peak_rss_bytes": ran["peak_rss_bytes"],
        "plan_over_measured": round(run_seconds(estimates) / wall, 2),
        "load_average": round(load, 2),
        "cpus": os.cpu_count(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="1b", help="comma-separated rows among 8b, 1b, tiny (default 1b)")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.out)
        return
    rows = [row.strip() for row in args.rows.split(",") if row.strip()]
    unknown = [row for row in rows if row not in SHAPES]
    if unknown:
        raise SystemExit(f"--rows: unknown {unknown[0]!r}; expected some of {', '.join(SHAPES)}")
    document = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    big = document.setdefault("big", {})
    with tempfile.TemporaryDirectory() as scratch:
        for row in rows:
            big[row] = measure(row, Path(scratch))
            print(json.dumps({row: big[row]}, indent=2))
    RESULTS.write_text(json.dumps(document, indent=2) + "\n")


if __name__ == "__main__":
    main()
