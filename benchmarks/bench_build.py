"""Building a seeded zoo model drawing only the weights it keeps (models/kept_draws.py) against drawing every one.

Per family and dtype, one seeded model of the zoo's shape (12 layers, d_model 768, 12 heads; --shape) over the zoo's
8-word sentence, built three ways in alternating rounds after a warm-up of each, in one process: as `orderlab run`
builds it (models/hf/loader.PretrainedBackend: the kept draws shared out over torch's threads), the same with the
kept draws in one thread, and with the draws that a later draw overwrites drawn too (kept_draws.built_drawing_every;
a 16-bit model's draws in float32 and rounded each way: models/rounded_draws.py). All give the same weights, bit
for bit (tests/unit/models/test_kept_draws.py; checked here once more per case). Writes its figures under
"seeded_build" in benchmarks/results.json with the load average, leaving the file's other keys as they are.

With --end-to-end ORDERS, also bench_zoo's end-to-end run of that many orders of 8 words (build, measure, write the
folder) with the kept draws shared out and in one thread, alternating, per family and dtype.

    python benchmarks/bench_build.py [--rounds 3] [--families gpt2 llama bert] [--dtypes float32 bfloat16]
        [--shape 768,12,12] [--end-to-end ORDERS] [--results FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import bench_zoo  # a sibling script (the script's folder is on the path): its sentence and writer
import torch

import orderlab.models.hf.loader as loader
import orderlab.models.kept_draws as kept_draws
from orderlab.models.hf.loader import PretrainedBackend, Seeded
from orderlab.models.kept_draws import KeptDraws, built_drawing_every, built_drawing_kept, drawing_kept_weights

WAYS = ("every_draw", "kept_draws_one_thread", "kept_draws")
KEPT = WAYS[1:]  # the ways whole runs are timed: what sharing the draws out is worth to a run


class Counted:
    """drawing_kept_weights, keeping the last build's mode (its skipped outputs); in one thread where `one_thread`."""

    def __init__(self) -> None:
        self.mode: KeptDraws | None = None
        self.one_thread = False

    @contextlib.contextmanager
    def __call__(self) -> Any:
        with drawing_kept_weights(workers=1 if self.one_thread else 0) as mode:
            self.mode = mode
            yield mode


@contextlib.contextmanager
def building(way: str, counted: Counted) -> Iterator[None]:
    """Seeded models built as a run builds them (their held draws counted), with the kept draws in one thread, or
    drawing every weight."""
    if way in KEPT:
        counted.one_thread = way == "kept_draws_one_thread"
        kept_draws.drawing_kept_weights = counted  # type: ignore[assignment]
    else:
        loader.built_drawing_kept = built_drawing_every
    try:
        yield
    finally:
        kept_draws.drawing_kept_weights = drawing_kept_weights
        loader.built_drawing_kept = built_drawing_kept


def built(family: str, dtype: str, shape: tuple[int, int, int], way: str, counted: Counted) -> tuple[float, Any]:
    """Seconds to build, and the model."""
    with building(way, counted):
        started = time.perf_counter()
        backend = PretrainedBackend(Seeded(*shape, tuple(bench_zoo.WORDS), 0), dtype=dtype, family=family)
        return time.perf_counter() - started, backend.model


def alternated(rounds: int, timed: Callable[[str, bool], float], ways: tuple[str, ...] = WAYS) -> dict[str, Any]:
    """The ways in alternating rounds after a warm-up of each (`timed(way, warm_up)`: seconds): their medians, the
    median of the per-round ratios of each over the first (`speedup`), every round."""
    times: dict[str, list[float]] = {way: [] for way in ways}
    for warm_up in (True, *([False] * rounds)):
        for way in ways:
            seconds = timed(way, warm_up)
            if not warm_up:
                times[way].append(seconds)
    first = times[ways[0]]
    return {
        "seconds": {way: statistics.median(t) for way, t in times.items()},
        "speedup": {way: statistics.median(a / b for a, b in zip(first, times[way], strict=True)) for way in ways[1:]},
        "rounds": times,
        "load_average": os.getloadavg(),
    }


def measure(family: str, dtype: str, shape: tuple[int, int, int], rounds: int) -> dict[str, Any]:
    """The build both ways; the warm-up's weights compared, the outputs the kept-draws build skipped counted."""
    counted = Counted()
    weights: dict[str, dict[str, torch.Tensor]] = {}

    def timed(way: str, warm_up: bool) -> float:
        seconds, model = built(family, dtype, shape, way, counted)
        if warm_up:
            weights[way] = model.state_dict()
        return seconds

    entry = alternated(rounds, timed)
    full, kept = weights["every_draw"], weights["kept_draws"]
    for way in KEPT:
        assert all(torch.equal(full[name], weights[way][name]) for name in full), f"{family} {dtype}: {way} differs"
    assert counted.mode is not None and not counted.mode.out_of_place
    weights_kept = sum(tensor.numel() for tensor in kept.values())
    return {**entry, "weights": weights_kept, "outputs_skipped": counted.mode.skipped}


def end_to_end(family: str, dtype: str, orders: int, rounds: int, folder: Path) -> dict[str, Any]:
    """bench_zoo's end-to-end run (8 words, build, measure, write the folder) with the kept draws in one thread and
    shared out: what sharing them is worth to a whole run, measured in one process."""
    folder.mkdir()
    case = bench_zoo.Case(family, 8, orders, folder, torch.device("cpu"), dtype)
    counted = Counted()

    def timed(way: str, _warm_up: bool) -> float:
        with building(way, counted):
            return bench_zoo.timed(case.end_to_end)

    return {"orders": orders, **alternated(rounds, timed, KEPT)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds; medians are reported")
    parser.add_argument("--families", nargs="+", default=["gpt2", "llama", "bert"])
    parser.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16"])
    parser.add_argument("--shape", default="768,12,12", help="d_model,n_heads,n_layers")
    parser.add_argument("--end-to-end", type=int, default=0, metavar="ORDERS",
                        help="also bench_zoo's end-to-end run of this many orders of 8 words both ways")  # fmt: skip
    parser.add_argument("--results", type=Path, default=bench_zoo.RESULTS, help="the JSON file the figures go into")
    args = parser.parse_args()
    d_model, n_heads, n_layers = map(int, args.shape.split(","))
    figures: dict[str, Any] = {
        "model": f"seeded zoo shape {args.shape} over the zoo's {len(bench_zoo.WORDS)}-word sentence",
        "torch": torch.__version__, "torch_threads": torch.get_num_threads(), "cores": os.cpu_count(),
        "rounds": args.rounds, "load_average_at_start": os.getloadavg(),
    }  # fmt: skip
    for family in args.families:
        for dtype in args.dtypes:
            entry = measure(family, dtype, (d_model, n_heads, n_layers), args.rounds)
            figures[f"{family}_{dtype}"] = entry
            seconds, speedup = entry["seconds"], entry["speedup"]
            print(f"{family} {dtype}: {seconds['every_draw']:.2f} s drawing every weight, "
                  f"{seconds['kept_draws_one_thread']:.2f} s drawing those kept in one thread "
                  f"({speedup['kept_draws_one_thread']:.2f}x), {seconds['kept_draws']:.2f} s shared out "
                  f"({speedup['kept_draws']:.2f}x; {entry['outputs_skipped'] / 1e6:.1f} M outputs skipped for "
                  f"{entry['weights'] / 1e6:.1f} M weights)", flush=True)  # fmt: skip
            if args.end_to_end:
                with tempfile.TemporaryDirectory() as scratch:
                    run = end_to_end(family, dtype, args.end_to_end, args.rounds, Path(scratch) / "run")
                entry["end_to_end"] = run
                print(f"  end to end, {args.end_to_end} orders: {run['seconds']['kept_draws_one_thread']:.2f} s with "
                      f"the kept draws in one thread, {run['seconds']['kept_draws']:.2f} s shared out "
                      f"({run['speedup']['kept_draws']:.2f}x)", flush=True)  # fmt: skip
    figures["load_average_at_end"] = os.getloadavg()
    bench_zoo.save(args.results, "seeded_build", figures)
    print(f"wrote {args.results} ('seeded_build')")


if __name__ == "__main__":
    main()
