"""Corpus-mode throughput vs sentence-transformers' own `encode`, same sentences, same batch size.

Both sides tokenize and run all-MiniLM-L6-v2 (trained position embeddings) on every sentence of
experiments/data/corpus.txt and its word shuffles, on the CPU, float32, and are timed in
alternating rounds (the machine is shared and noisy: compare the ratio, not the absolute rates).
Also checks that orderlab's mean pooling reproduces sentence-transformers' embeddings.
Writes benchmarks/pretrained_results.json. Run: make bench-pretrained
"""

from __future__ import annotations

import itertools
import json
import os
import platform
import statistics
import time
from pathlib import Path

import torch

from orderlab.core.corpustext import read_corpus
from orderlab.measure import corpus
from orderlab.measure.adapters import build_adapters
from orderlab.models.devices import CPU
from orderlab.models.hf.loader import import_transformers
from orderlab.spec.extras import packaged_model_folder
from orderlab.spec.load import load_spec
from orderlab.spec.model_specs import CorpusInputs
from orderlab.spec.schema import Spec

ROOT = Path(__file__).resolve().parent.parent
BATCH_SIZE, SHUFFLES, ROUNDS = 64, 10, 5


def main() -> None:
    transformers = import_transformers()  # sets HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE first
    import sentence_transformers

    folder = packaged_model_folder("minilm")
    lines = read_corpus(ROOT / "experiments" / "data" / "corpus.txt")
    inputs = CorpusInputs(file="corpus.txt", shuffles=SHUFFLES, batch_size=BATCH_SIZE)
    loaded = load_spec(ROOT / "experiments" / "minilm_corpus.yaml")
    adapters = build_adapters(loaded.spec, CPU, loaded.path)  # in label order: shuffled, sinusoidal, trained, zero
    trained = next(a for a in adapters if a.label == "trained")  # the shipped weights, as corpus mode runs them
    reference = sentence_transformers.SentenceTransformer(str(folder), device="cpu", local_files_only=True)
    work = corpus.plan(lines, inputs)
    texts = [
        " ".join(line.words) if s == 0 else " ".join(line.words[i] for i in work.permutations[o][s - 1])
        for o, s in zip(work.owner, work.shuffle, strict=True)
        for line in [lines[o]]
    ]
    tokens = sum(len(trained.sentence(lines[o].words).tokens.ids) for o in work.owner)

    def run_orderlab() -> torch.Tensor:
        planned = corpus.plan(lines, inputs)
        with torch.inference_mode():
            return corpus.encode(trained, planned, BATCH_SIZE)["mean"]  # tokenizing is part of the work

    def run_reference() -> torch.Tensor:
        return reference.encode(texts, batch_size=BATCH_SIZE, convert_to_tensor=True, show_progress_bar=False)

    timings: dict[str, list[float]] = {"orderlab": [], "sentence_transformers": []}
    run_orderlab(), run_reference()  # warm-up
    for _ in range(ROUNDS):
        for name, call in (("orderlab", run_orderlab), ("sentence_transformers", run_reference)):
            started = time.perf_counter()
            call()
            timings[name].append(time.perf_counter() - started)
    ours, theirs = run_orderlab(), run_reference().double()
    agreement = torch.nn.functional.cosine_similarity(ours, theirs, dim=-1)  # (S,)
    medians = {name: statistics.median(t) for name, t in timings.items()}
    results = {
        "what": "all-MiniLM-L6-v2, experiments/data/corpus.txt + word shuffles, CPU float32, tokenize+forward+pool",
        "sequences": len(work.owner),
        "tokens": tokens,
        "batch_size": BATCH_SIZE,
        "rounds": ROUNDS,
        "seconds_median": {k: round(v, 3) for k, v in medians.items()},
        "seconds_all": {k: [round(x, 3) for x in v] for k, v in timings.items()},
        "sequences_per_second": {k: round(len(work.owner) / v, 1) for k, v in medians.items()},
        "orderlab_throughput_ratio": round(medians["sentence_transformers"] / medians["orderlab"], 3),
        "mean_pooling_agreement_min_cosine": float(agreement.min()),
        "torch_threads": torch.get_num_threads(),
        "machine": {"cpu_count": os.cpu_count(), "processor": platform.processor() or platform.machine()},
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                     "sentence_transformers": sentence_transformers.__version__, "python": platform.python_version()},
    }  # fmt: skip
    results["permutations_of_one_sentence"] = one_sentence(reference)
    out = ROOT / "benchmarks" / "pretrained_results.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


SENTENCE = "the grumpy postman outperformed the dog"  # 6 words, 720 orders; sub-words move with words


def one_sentence(reference: object) -> dict:
    """Every order of one sentence through MiniLM: orderlab's adapter (the measuring loop's forward, chunk by chunk)
    against sentence-transformers' encode of the same reordered strings, alternating rounds."""
    spec = Spec.model_validate({
        "model": {"kind": "pretrained", "name": "minilm", "position_embeddings": ["trained"], "dtype": "float32"},
        "inputs": [{"sentence": SENTENCE, "permutations": "all"}], "metrics": ["invariance"],
    })  # fmt: skip
    adapter = build_adapters(spec, torch.device("cpu"), ROOT / "spec.yaml")[0]
    words = SENTENCE.split()
    orders = list(itertools.permutations(range(len(words))))
    texts = [" ".join(words[i] for i in order) for order in orders]
    chunk = adapter.chunk_size(len(words), False)

    def run_orderlab() -> None:
        sentence = adapter.sentence(words)
        with torch.inference_mode():
            for start in range(0, len(orders), chunk):
                sentence.forward(torch.tensor(orders[start : start + chunk]))

    def run_reference() -> None:
        reference.encode(texts, batch_size=chunk, convert_to_tensor=True, show_progress_bar=False)  # type: ignore[attr-defined]

    run_orderlab(), run_reference()  # warm-up
    timings: dict[str, list[float]] = {"orderlab": [], "sentence_transformers": []}
    for _ in range(ROUNDS):
        for name, call in (("orderlab", run_orderlab), ("sentence_transformers", run_reference)):
            started = time.perf_counter()
            call()
            timings[name].append(time.perf_counter() - started)
    medians = {name: statistics.median(t) for name, t in timings.items()}
    return {
        "sentence": SENTENCE, "sequences": len(orders), "batch_size": chunk,
        "seconds_all": {k: [round(x, 3) for x in v] for k, v in timings.items()},
        "sequences_per_second": {k: round(len(orders) / v, 1) for k, v in medians.items()},
        "orderlab_throughput_ratio": round(medians["sentence_transformers"] / medians["orderlab"], 3),
    }  # fmt: skip


if __name__ == "__main__":
    main()
