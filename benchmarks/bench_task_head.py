"""A classifier's predictions under shuffles at the literature's size: orderlab against the loop a user would write.

Issue 40: 1,000 labelled examples x 100 orders through a BERT-base-shaped sequence classifier (seeded weights and a
seeded 2-label head: 12 layers, d_model 768, 12 heads) in bfloat16 on this CPU; orderlab's throughput at least 0.95x
the plain transformers loop's at its best batch, the ratio measured in one run. Side by side, in alternating rounds:
  - orderlab end to end: `orderlab run`'s path for dataset inputs (commands/run.py: the classifier built, every
    example and its shuffles run, each original again in the twin precision for its round-off, the published metrics
    with their bootstrap intervals, the folder written), at the plain loop's best batch (inputs.batch_size),
  - the plain loop: the same model object, the same shuffled sentences in the same order, tokenized in batches
    (is_split_into_words, padded) and run for their logits, at its best batch (the fastest of 64 to 1,024, timed
    once each beforehand on the first 1,024 sentences).
Each figure is the median of the rounds; the ratio is the median of the per-round ratios (plain seconds / orderlab
seconds: above 1, orderlab is faster). The machine is shared: the load average is recorded; compare ratios, not rates.
Both sides first run a tenth of the examples (at most 20) to warm up; orderlab's predicted labels are then checked
against the plain loop's argmax on the last round's outputs (ties aside), so that no side runs the full size untimed.
Writing orderlab's run includes building the seeded classifier (85M random weights drawn: seconds, which the plain loop
is handed for free); it is timed apart and the ratio is also given without it ("ratio_without_build"), the figure a
run of 100,000 sequences amortises to. Orderlab also runs each original again in the twin precision (float32 for
bfloat16: its float32 copy of the model and one more pass), which the plain loop does not: that is timed apart too
(the same twin, the same originals, in the same batches) and "ratio_like_for_like" leaves out both, the two loops'
passes over the same sequences alone. Orderlab takes its sequences in order of their token counts (each batch pads
little); the plain loop pads each batch to its longest, as a loop over the orders as given does.
Writes its figures under "task_head" (the full size; "task_head_quick" with --quick, "task_head_<E>x<O>" at any other
size) in benchmarks/task_head_results.json, leaving the file's other keys as they are. The full size is about half
an hour a round on two quiet cores; --quick (40 examples x 20 orders) is the one that fits a test session, and its
ratio is the figure to compare, not its rates; a mid size (--examples 100 --orders 100) has several batches, as the
full size does.

    python benchmarks/bench_task_head.py [--quick] [--examples 1000] [--orders 100] [--rounds 3] [--dtype bfloat16]
        [--results FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pandas as pd
import torch
import yaml

from orderlab.commands.run import write_experiment
from orderlab.measure.loop import tune_allocator
from orderlab.measure.run_options import RunOptions
from orderlab.measure.task_measure import Orders, classifier, example_orders, run_orders
from orderlab.plan.device import cpu_flags
from orderlab.spec.dataset_examples import examples_of
from orderlab.spec.fields import twin_dtype
from orderlab.spec.load import load_spec
from orderlab.spec.schema import DatasetInputs

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "task_head_results.json"  # its own file: no merge with results.json's writers
VOCABULARY = [f"w{index}" for index in range(400)]  # a seeded model's word-level tokenizer: one token a word
LENGTHS = (8, 12)  # words per example, drawn uniformly (inclusive)
BATCHES = (64, 128, 256, 512, 1024)  # the plain loop's batches tried for its best
TARGET = 0.95
T = TypeVar("T")


def write_case(folder: Path, examples: int, orders: int, dtype: str, batch: int) -> Path:
    """The spec and its JSONL file of seeded labelled examples."""
    draw = random.Random(0)
    lines = [json.dumps({"text": " ".join(draw.sample(VOCABULARY, draw.randint(*LENGTHS))), "label": index % 2})
             for index in range(examples)]  # fmt: skip
    (folder / "examples.jsonl").write_text("\n".join(lines) + "\n")
    spec = {
        "name": "bench_task_head", "seed": 0,
        "model": {"kind": "hf", "family": "bert", "head": "classification", "num_labels": 2, "d_model": 768,
                  "n_heads": 12, "n_layers": 12, "dtype": dtype, "position_embeddings": ["trained"]},
        "inputs": {"dataset": "examples.jsonl", "text": "text", "label": "label", "batch_size": batch,
                   "permutations": {"random": orders, "distinct": "up_to"}},
    }  # fmt: skip
    path = folder / "bench_task_head.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


class Case:
    """The spec on disk, the classifier orderlab builds for it, and the plain loop's sentences (the same orders)."""

    def __init__(self, path: Path):
        self.loaded = load_spec(path)
        self.out = path.parent / "out"
        inputs = self.loaded.spec.inputs
        assert isinstance(inputs, DatasetInputs)
        self.inputs, self.examples = inputs, examples_of(inputs, path)
        self.backend = classifier(self.loaded.spec, path, self.examples, RunOptions(torch.device("cpu")))
        self.orders = [example_orders(example, index, inputs) for index, example in enumerate(self.examples)]
        self.sentences = [words for example, orders in zip(self.examples, self.orders, strict=True)
                          for words in orders.sequences(example)[0]]  # fmt: skip
        self.best_batch = BATCHES[0]

    def end_to_end(self) -> None:
        """`orderlab run` as the CLI runs it, without the terminal table."""
        write_experiment(self.loaded, self.out / self.loaded.spec.name, RunOptions(torch.device("cpu"), force=True))

    def twin(self) -> None:
        """What orderlab runs that the plain loop does not: the twin made and the originals run in it, as
        task_measure.TaskMeasurement.frames runs them."""
        twin = self.backend.twin(twin_dtype(self.loaded.spec.model.dtype))
        originals = [Orders(orders.text[:1], orders.pair[:1]) for orders in self.orders]
        run_orders(twin, self.examples, originals, self.inputs.batch_size, ignore)

    def plain(self, size: int | None = None, sentences: list[list[str]] | None = None) -> np.ndarray:
        """The loop a user would write: tokenize a batch of shuffled sentences, run it, keep its logits."""
        size, sentences = size or self.best_batch, self.sentences if sentences is None else sentences
        model, tokenizer, logits = self.backend.model, self.backend.tokenizer, []
        with torch.inference_mode():
            for start in range(0, len(sentences), size):
                encoded = tokenizer(sentences[start : start + size], is_split_into_words=True, padding=True,
                                    return_tensors="pt")  # fmt: skip
                logits.append(model(**encoded).logits.float().numpy())
        return np.concatenate(logits)

    def find_best_batch(self) -> dict[str, float]:
        sample = self.sentences[: max(BATCHES)]
        seconds = {size: timed(partial(self.plain, size, sample)) for size in BATCHES}
        self.best_batch = min(seconds, key=seconds.__getitem__)
        return {str(size): value for size, value in seconds.items()}

    def agreement(self, logits: np.ndarray) -> float:
        """The share of orders whose label orderlab's last run predicted (metrics.csv, one row a sentence in the plain
        loop's order) is the argmax of the plain loop's `logits`, ties aside."""
        rows = pd.read_csv(self.out / self.loaded.spec.name / "metrics.csv", keep_default_na=False)
        predicted = rows[rows["metric"] == "predicted_label"]
        plain = np.array(self.backend.id2label)[logits.argmax(axis=1)]
        decided = predicted["verdict"].to_numpy() == ""
        return float((plain[decided] == predicted["predicted"].to_numpy()[decided]).mean())


def ignore(_count: int) -> None:
    """No progress to show."""


def timed(call: Callable[[], object]) -> float:
    return timed_with(call)[0]


def timed_with(call: Callable[[], T]) -> tuple[float, T]:
    """The call's seconds, and what it returned."""
    started = time.perf_counter()
    returned = call()
    return time.perf_counter() - started, returned


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="40 examples x 20 orders, one round unless --rounds")
    parser.add_argument("--examples", type=int, default=1000, help="labelled examples")
    parser.add_argument("--orders", type=int, default=100, help="shuffles per example")
    parser.add_argument("--rounds", type=int, help="alternating rounds, medians reported (default 3; --quick: 1)")
    parser.add_argument("--dtype", default="bfloat16", help="the classifier's dtype, both sides")
    parser.add_argument("--results", type=Path, default=RESULTS, help="the JSON file the figures go into")
    args = parser.parse_args()
    examples, orders, rounds = (
        (40, 20, args.rounds or 1) if args.quick else (args.examples, args.orders, args.rounds or 3)
    )
    tune_allocator()  # as `orderlab run` does: both sides under the same allocator
    figures: dict[str, Any] = {
        "model": f"seeded BERT sequence classifier, 12 layers, d_model 768, 12 heads, 2 labels, {args.dtype}",
        "examples": examples, "orders_per_example": orders, "rounds": rounds, "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(), "cpu_flags": cpu_flags(), "cores": os.cpu_count(),
        "load_average_at_start": os.getloadavg(),
    }  # fmt: skip
    with tempfile.TemporaryDirectory() as scratch:
        case = Case(write_case(Path(scratch), examples, orders, args.dtype, BATCHES[0]))
        figures["plain_batch_seconds"] = case.find_best_batch()
        best = case.best_batch
        case = Case(write_case(Path(scratch), examples, orders, args.dtype, best))  # orderlab at it too
        case.best_batch = best  # one search: a second one, on a loaded machine, may pick another batch for one side
        figures["best_batch"], figures["sequences"] = case.best_batch, len(case.sentences)
        warm = Path(scratch) / "warm"
        warm.mkdir()
        small = Case(write_case(warm, max(1, min(20, examples // 10)), orders, args.dtype, best))
        small.best_batch = best
        small.end_to_end()  # the first calls' costs (kernels chosen, memory pooled), untimed
        small.plain()
        build = timed(lambda: classifier(case.loaded.spec, case.loaded.path, examples_of(case.inputs, case.loaded.path),
                                         RunOptions(torch.device("cpu"))))  # fmt: skip
        twin = timed(case.twin)
        seconds: dict[str, list[float]] = {"orderlab": [], "plain": []}
        for _ in range(rounds):
            seconds["orderlab"].append(timed(case.end_to_end))
            took, logits = timed_with(case.plain)
            seconds["plain"].append(took)
        figures["agreement"] = case.agreement(logits)  # the last round's outputs, both sides
    ratios = [plain / ours for plain, ours in zip(seconds["plain"], seconds["orderlab"], strict=True)]
    ours, plain = statistics.median(seconds["orderlab"]), statistics.median(seconds["plain"])
    figures |= {
        "orderlab_seconds": ours, "plain_seconds": plain, "build_seconds": build, "twin_seconds": twin,
        "orderlab_sequences_per_second": len(case.sentences) / ours,
        "ratio_to_best_plain": statistics.median(ratios), "ratio_without_build": plain / (ours - build),
        "ratio_like_for_like": plain / (ours - build - twin),
        "target": TARGET, "met": statistics.median(ratios) >= TARGET, "load_average_at_end": os.getloadavg(),
    }  # fmt: skip
    print(f"{figures['sequences']:,} sequences, best plain batch {case.best_batch}: orderlab "
          f"{figures['orderlab_seconds']:.1f} s, plain {figures['plain_seconds']:.1f} s, ratio "
          f"{figures['ratio_to_best_plain']:.2f} ({'met' if figures['met'] else 'MISSED'} {TARGET}; without its "
          f"{build:.1f} s build {figures['ratio_without_build']:.2f}, and its {twin:.1f} s twin too "
          f"{figures['ratio_like_for_like']:.2f}); agreement "
          f"{figures['agreement']:.3f}; load {figures['load_average_at_start'][0]:.1f} -> "
          f"{figures['load_average_at_end'][0]:.1f}")  # fmt: skip
    results = json.loads(args.results.read_text()) if args.results.is_file() else {}
    size = "" if (examples, orders) == (1000, 100) else f"_{examples}x{orders}"
    key = "task_head" + ("_quick" if args.quick else size)
    results[key] = figures
    args.results.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {args.results} ({key!r})")


if __name__ == "__main__":
    main()
