"""Packed top depths (models/kv_prefix.top_pass) against the depth-by-depth walk of a causal LM's prefixes, on the CPU.

All orders of a 5- and a 7-word sentence through seeded gpt2 and llama zoo models (d_model 64, 4 heads, 4 layers,
float32, ablation trained, as bench_prefix_hf.py), the adapter's passes alone (Sentence.forward chunk by chunk, the
run's chunks), with states (equivariance, lm_logprob) and log-probabilities only (lm_logprob), on one thread (two
threads on this loaded, shared 2-core machine timed spin-waits, not work). The walk and the packed passes alternate
round by round; the speed-up is the median of the per-round ratios, with the model calls each makes. The figure a GPU
needs is the card's (benchmarks/gpu_check.py times the same choice on one); this one says what the CPU pays or saves.
Writes "packed_top_depths" in benchmarks/results.json, leaving the file's other keys as they are.

    python benchmarks/bench_packed.py [--rounds 5] [--packed-tokens 512]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

import torch

from orderlab.core import permutations as perms
from orderlab.measure.adapters import build_adapters
from orderlab.models.devices import CPU
from orderlab.models.pretrained import PretrainedAdapter
from orderlab.plan.decisions import Decisions
from orderlab.spec.schema import Spec

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results.json"
WORDS = ["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dogs"]  # distinct words; the first n are used
METRICS = {"states": ["equivariance", "lm_logprob"], "lm_only": ["lm_logprob"]}


def zoo_spec(family: str, n: int, metrics: list[str]) -> Spec:
    return Spec.model_validate({
        "name": "bench_packed",
        "model": {"kind": "hf", "family": family, "d_model": 64, "n_heads": 4, "n_layers": 4, "dtype": "float32",
                  "position_embeddings": ["trained"]},
        "inputs": [{"sentence": " ".join(WORDS[:n]), "permutations": "all"}],
        "metrics": metrics,
    })  # fmt: skip


def passes(spec: Spec, packed_tokens: int) -> tuple[float, int]:
    """Seconds of the adapter's passes over the spec's orders in the run's chunks, and the model calls they made."""
    decisions = Decisions(share_prefixes=True, compile=False, packed_tokens=packed_tokens)
    adapter = build_adapters(spec, CPU, ROOT / "spec.yaml", decisions=decisions)[0]
    assert isinstance(adapter, PretrainedAdapter)
    words = spec.sentences[0].sentence.split()
    chunks = [torch.tensor(c) for c in perms.chunks(perms.iterate("all", words), adapter.chunk_size(len(words), False))]
    sentence, calls = adapter.sentence(words), [0]
    embeddings = adapter.shared.backend.model.get_input_embeddings()
    handle = embeddings.register_forward_hook(lambda *_: calls.__setitem__(0, calls[0] + 1))
    try:
        started = time.perf_counter()
        for chunk in chunks:
            sentence.forward(chunk)
        return time.perf_counter() - started, calls[0]
    finally:
        handle.remove()


def measure(spec: Spec, packed_tokens: int, rounds: int) -> dict[str, Any]:
    """The walk and the packed passes timed round by round, after one untimed round each."""
    passes(spec, 0), passes(spec, packed_tokens)
    pairs = [(passes(spec, 0), passes(spec, packed_tokens)) for _ in range(rounds)]
    return {
        "walk_seconds": statistics.median(walk for (walk, _), _ in pairs),
        "packed_seconds": statistics.median(packed for _, (packed, _) in pairs),
        "speedup": statistics.median(walk / packed for (walk, _), (packed, _) in pairs),
        "walk_calls": pairs[0][0][1], "packed_calls": pairs[0][1][1],
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--packed-tokens", type=int, default=512)
    args = parser.parse_args()
    torch.set_num_threads(1)
    figures: dict[str, Any] = {
        "model": "seeded zoo, d_model 64, 4 heads, 4 layers, float32, ablation trained",
        "packed_tokens": args.packed_tokens, "torch_threads": 1, "load_average_at_start": os.getloadavg(),
    }  # fmt: skip
    with torch.inference_mode():
        for family in ("gpt2", "llama"):
            for n in (5, 7):
                for kind, metrics in METRICS.items():
                    got = figures[f"{family}_{n}_words_{kind}"] = measure(zoo_spec(family, n, metrics),
                                                                          args.packed_tokens, args.rounds)  # fmt: skip
                    print(f"{family} {n} words {kind}: walk {got['walk_seconds'] * 1e3:.0f} ms in "
                          f"{got['walk_calls']} calls, packed {got['packed_seconds'] * 1e3:.0f} ms in "
                          f"{got['packed_calls']} calls, {got['speedup']:.2f}x", flush=True)  # fmt: skip
    figures["load_average_at_end"] = os.getloadavg()
    results = json.loads(RESULTS.read_text())
    results["packed_top_depths"] = figures
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    load = figures["load_average_at_start"][0], figures["load_average_at_end"][0]
    print(f"load average {load[0]:.1f} at start, {load[1]:.1f} at end; wrote {RESULTS}")


if __name__ == "__main__":
    main()
