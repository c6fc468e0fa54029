"""GPT-2's tanh GELU in place (models/hf/activations.py) against transformers' own, in a GPT-2-shaped measuring loop.

One seeded GPT-2-shaped model (12 layers, d_model 768, 12 heads; --shape), one 8-word sentence, its first --orders
reorderings: the measuring loop run with each layer's GELU as orderlab builds it (in place) and with transformers'
NewGELUActivation put back, in alternating rounds in one process; the seconds the GELU modules themselves take,
timed by hooks around them; and both ways as the run walks its prefixes (equivariance, invariance, lm_logprob) and
as it passes them dense (the same with attention maps, which run dense). The numbers of both ways are the same, bit
for bit (tests/unit/models/test_inplace_gelu.py). Writes its figures under "inplace_gelu" in benchmarks/results.json
with the load average, leaving the file's other keys as they are.

    python benchmarks/bench_gelu.py [--rounds 3] [--orders 1024] [--words 8] [--shape 768,12,12] [--results FILE]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import bench_zoo  # a sibling script (the script's folder is on the path): its Case, spec and writer
import torch

from orderlab.measure.loop import tune_allocator
from orderlab.models.hf.activations import InPlaceGELU

PASSES = {"walked": ["equivariance", "invariance", "lm_logprob"], "dense": ["equivariance", "lm_logprob", "attention"]}


class GeluClock:
    """Seconds spent inside the model's GELU modules, whichever way they compute."""

    def __init__(self) -> None:
        self.seconds, self.started = 0.0, 0.0

    def before(self, _module: torch.nn.Module, _args: Any) -> None:
        self.started = time.perf_counter()

    def after(self, _module: torch.nn.Module, _args: Any, _out: Any) -> None:
        self.seconds += time.perf_counter() - self.started


def put(model: torch.nn.Module, inplace: bool, clock: GeluClock) -> None:
    """Each layer's GELU as orderlab builds it (in place) or as transformers does, timed by `clock`."""
    from transformers.activations import NewGELUActivation

    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, InPlaceGELU | NewGELUActivation):
                module = InPlaceGELU("new_gelu") if inplace else NewGELUActivation()
                module.register_forward_pre_hook(clock.before)
                module.register_forward_hook(clock.after)
                setattr(parent, name, module)


def measure(metrics: list[str], words: int, orders: int, rounds: int, folder: Path) -> dict[str, Any]:
    """Both ways in alternating rounds after a warm-up each: medians of the loop's and the GELUs' seconds."""
    folder.mkdir()
    case = bench_zoo.Case("gpt2", words, orders, folder, torch.device("cpu"), metrics=metrics)
    model, clock = case.adapters[0].shared.backend.model, GeluClock()  # type: ignore[attr-defined]
    times: dict[str, list[float]] = {"inplace": [], "transformers": []}
    gelu: dict[str, list[float]] = {"inplace": [], "transformers": []}
    for warm_up in (True, *([False] * rounds)):
        for way in times:
            put(model, way == "inplace", clock)
            clock.seconds = 0.0
            seconds = bench_zoo.timed(case.loop)
            if not warm_up:
                times[way].append(seconds)
                gelu[way].append(clock.seconds)
    loop = {way: statistics.median(t) for way, t in times.items()}
    return {
        "loop_seconds": loop,
        "gelu_seconds": {way: statistics.median(t) for way, t in gelu.items()},
        "loop_speedup": statistics.median(t / i for t, i in zip(times["transformers"], times["inplace"], strict=True)),
        "rounds": times,
        "load_average": os.getloadavg(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds; medians are reported")
    parser.add_argument("--orders", type=int, default=1024, help="reorderings (the first, in label order)")
    parser.add_argument("--words", type=int, default=8, help="the sentence's length in words")
    parser.add_argument("--shape", default="768,12,12", help="d_model,n_heads,n_layers")
    parser.add_argument("--results", type=Path, default=bench_zoo.RESULTS, help="the JSON file the figures go into")
    args = parser.parse_args()
    bench_zoo.SHAPE.update(zip(("d_model", "n_heads", "n_layers"), map(int, args.shape.split(",")), strict=True))
    tune_allocator()  # as `orderlab run` does
    figures: dict[str, Any] = {
        "model": f"seeded GPT-2 shape {args.shape}, float32, {args.words} words, {args.orders} orders",
        "torch": torch.__version__, "torch_threads": torch.get_num_threads(), "cores": os.cpu_count(),
        "rounds": args.rounds, "load_average_at_start": os.getloadavg(),
    }  # fmt: skip
    with tempfile.TemporaryDirectory() as scratch:
        for name, metrics in PASSES.items():
            figures[name] = measure(metrics, args.words, args.orders, args.rounds, Path(scratch) / name)
            entry = figures[name]
            loop, gelu = entry["loop_seconds"], entry["gelu_seconds"]
            print(f"{name}: loop {loop['transformers']:.2f} s with transformers' GELU, {loop['inplace']:.2f} s in "
                  f"place ({entry['loop_speedup']:.2f}x); the GELUs {gelu['transformers']:.2f} s and "
                  f"{gelu['inplace']:.2f} s")  # fmt: skip
    figures["load_average_at_end"] = os.getloadavg()
    bench_zoo.save(args.results, "inplace_gelu", figures)
    print(f"wrote {args.results} ('inplace_gelu')")


if __name__ == "__main__":
    main()
