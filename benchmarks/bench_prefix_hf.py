"""Causal prefix sharing for the zoo's causal LMs: the measuring loop run dense vs through the model's KV cache.

All 7! = 5,040 orders of a 7-word sentence through seeded gpt2 and llama zoo models (d_model 64, 4 heads,
4 layers, float32, as experiments/zoo_causal.yaml), metrics equivariance and lm_logprob (no attention maps,
so causal passes may share prefixes). Dense and shared runs alternate round by round (the machine is shared:
compare the ratio, not the absolute rates); the speed-up is the median of the per-round ratios. Timed twice:
the whole loop (passes and metrics), and the adapter's passes alone (Sentence.forward over the same chunks).
Writes its figures under "prefix_sharing_hf" in benchmarks/results.json, leaving the file's other keys as they are.

    python benchmarks/bench_prefix_hf.py [--rounds 7] [--words 7]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch

from orderlab.core import permutations as perms
from orderlab.measure.adapters import build_adapters
from orderlab.measure.loop import MeasuringLoop
from orderlab.models.devices import CPU
from orderlab.models.prefix_trie import distinct_prefixes
from orderlab.plan.decisions import Decisions
from orderlab.spec.schema import Spec

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results.json"
WORDS = ["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dogs"]  # distinct words; the first n are used
FAMILIES = ("gpt2", "llama")


def zoo_spec(family: str, n: int) -> Spec:
    return Spec.model_validate({
        "name": "bench_prefix_hf",
        "model": {"kind": "hf", "family": family, "d_model": 64, "n_heads": 4, "n_layers": 4, "dtype": "float32",
                  "position_embeddings": ["trained"]},
        "inputs": [{"sentence": " ".join(WORDS[:n]), "permutations": "all"}],
        "metrics": ["equivariance", "lm_logprob"],
    })  # fmt: skip


def loop_rate(spec: Spec, share_prefixes: bool) -> float:
    """Sequences/s of one measuring-loop pass over the spec's n! orders (the model built beforehand, not timed)."""
    adapters = build_adapters(spec, CPU, ROOT / "spec.yaml", decisions=Decisions(share_prefixes, compile=False))
    started = time.perf_counter()
    for _ in MeasuringLoop(spec).frames(adapters):
        pass
    return math.factorial(len(spec.sentences[0].sentence.split())) / (time.perf_counter() - started)


def forward_rate(spec: Spec, share_prefixes: bool) -> float:
    """Sequences/s of the adapter's passes alone (Sentence.forward chunk by chunk), without the loop's metrics."""
    adapter = build_adapters(spec, CPU, ROOT / "spec.yaml", decisions=Decisions(share_prefixes, compile=False))[0]
    words = spec.sentences[0].sentence.split()
    chunks = [torch.tensor(c) for c in perms.chunks(perms.iterate("all", words), adapter.chunk_size(0, False))]
    sentence = adapter.sentence(words)
    started = time.perf_counter()
    for chunk in chunks:
        sentence.forward(chunk)
    return math.factorial(len(words)) / (time.perf_counter() - started)


def interleaved(rate: Callable[[Spec, bool], float], spec: Spec, rounds: int) -> dict:
    """Dense and shared timed round by round; the speed-up is the median of the per-round ratios."""
    pairs = [(rate(spec, False), rate(spec, True)) for _ in range(rounds)]
    return {
        "dense_sequences_per_s": statistics.median(dense for dense, _ in pairs),
        "shared_sequences_per_s": statistics.median(shared for _, shared in pairs),
        "speedup": statistics.median(shared / dense for dense, shared in pairs),
        "rounds": [{"dense": dense, "shared": shared} for dense, shared in pairs],
    }


def measure(family: str, n: int, rounds: int) -> dict:
    """The measuring loop and the passes alone, dense and shared, after a warm-up on 5! orders."""
    loop_rate(zoo_spec(family, 5), True), loop_rate(zoo_spec(family, 5), False)
    spec = zoo_spec(family, n)
    chunk = build_adapters(spec, CPU, ROOT / "spec.yaml")[0].chunk_size(n, False)
    computed = sum(distinct_prefixes(torch.tensor(c)) for c in perms.chunks(perms.iterate("all", WORDS[:n]), chunk))
    return {
        "loop": interleaved(loop_rate, spec, rounds), "passes": interleaved(forward_rate, spec, rounds),
        "chunk_size": chunk, "tokens_dense": math.factorial(n) * (n + 1), "tokens_shared": computed + 1,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--words", type=int, default=7)
    args = parser.parse_args()
    load = os.getloadavg()
    figures: dict = {
        "model": "seeded zoo, d_model 64, 4 heads, 4 layers, float32, ablation trained",
        "sentence_words": args.words, "permutations": math.factorial(args.words),
        "metrics": ["equivariance", "lm_logprob"], "torch_threads": torch.get_num_threads(),
        "load_average_at_start": load,
    }  # fmt: skip
    with torch.inference_mode():
        for family in FAMILIES:
            figures[family] = measure(family, args.words, args.rounds)
            for part in ("loop", "passes"):
                rates = figures[family][part]
                print(f"{family} {part}: dense {rates['dense_sequences_per_s']:,.0f} seq/s, shared "
                      f"{rates['shared_sequences_per_s']:,.0f} seq/s, {rates['speedup']:.2f}x")  # fmt: skip
    figures["load_average_at_end"] = os.getloadavg()
    results = json.loads(RESULTS.read_text())
    results["prefix_sharing_hf"] = figures
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print(f"load average {load[0]:.1f} at start, {figures['load_average_at_end'][0]:.1f} at end; wrote {RESULTS}")


if __name__ == "__main__":
    main()
