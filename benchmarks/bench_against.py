"""Is this checkout slower than another commit? bench_zoo's measuring loop and its end-to-end run against the plain
transformers loop, timed at this checkout and at `--base` (its files exported by `git archive` into a temporary
folder), each side in processes of its own, the sides alternating round by round, so that what a shared machine drifts
by (load, clocks) falls on both.

A ratio on a loaded 2-core machine moves by 10-20% from one run to the next (benchmarks/results.json's zoo figures
and an issue's figures were taken on different days), so a "below the figure" is only a regression when the base,
measured beside it, does better. Each process builds the case (a seeded model, the first --orders orders of a
--words-word sentence), warms each side's calls, then times --repeats rounds of the measuring loop, of the end-to-end
run (bench_zoo's Case.end_to_end: `orderlab run` without the terminal table) and of the plain loop at one batch, the
same on both sides (in 16 bits the loop and the run use `escalate: false` where the checkout has it: the plain loop
never re-measures an order). The plain loop is the same code on both sides, so it shows the machine's drift; the
sides' own times, round by round, say which is faster (base_loop_over_this_loop, base_end_to_end_over_this_end_to_end).
Right after the build, before anything is warm, each process also times its round-off twin made and its first pass,
once, as a run pays them (twin_first_pass_seconds); --twin-only times that alone. Figures go under "against_base" in
--results, keyed by dtype (`<dtype>_twin_only` for --twin-only).

    python benchmarks/bench_against.py --base 202e44b [--families gpt2 bert] [--dtype bfloat16] [--rounds 2]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results.json"
BATCH = {"gpt2": 512, "llama": 128, "bert": 256}  # the plain loop's batch: its best on this CPU in the zoo figures


def exported(revision: str, folder: Path) -> str:
    """The commit `revision` names, its tree written into `folder`; the commit's hash."""
    commit = git("rev-parse", "--verify", f"{revision}^{{commit}}").strip()
    archive = subprocess.run(["git", "archive", commit], cwd=ROOT, capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
    return commit


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout


def side(root: Path, args: argparse.Namespace, family: str) -> dict[str, Any]:
    """One process at `root`'s code: its figures (the child's last line)."""
    command = [sys.executable, str(Path(__file__).resolve()), "--child", str(root), "--families", family,
               "--dtype", args.dtype, "--repeats", str(args.repeats), "--words", str(args.words),
               "--orders", str(args.orders), "--shape", args.shape,
               "--batch", str(args.batch or BATCH[family]), *(["--twin-only"] if args.twin_only else [])]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"bench_against: the side at {root} failed:\n{done.stderr[-2000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def child(args: argparse.Namespace) -> None:
    """In a process whose imports come from args.child: time its measuring loop against its plain loop."""
    root = Path(args.child).resolve()
    sys.path[:0] = [str(root), str(root / "benchmarks")]  # before this script's own folder, which Python put first
    import bench_zoo
    import torch

    import orderlab

    for module in (orderlab, bench_zoo):
        assert Path(module.__file__).resolve().is_relative_to(root), f"{module.__name__} from {module.__file__}"

    bench_zoo.tune_allocator()  # as bench_zoo and `orderlab run` do: the plain loop's large tensors stay mapped
    bench_zoo.SHAPE.update(zip(("d_model", "n_heads", "n_layers"), map(int, args.shape.split(",")), strict=True))
    (family,) = args.families
    with tempfile.TemporaryDirectory() as scratch:
        case = bench_zoo.Case(family, args.words, args.orders, Path(scratch), torch.device("cpu"), args.dtype)
        twin = twin_first_pass(case, bench_zoo.timed, torch)
        like_for_like = getattr(case, "unescalated", None) is not None
        calls = {} if args.twin_only else {  # --twin-only: the twin's first pass above, nothing else
            "loop": case.loop_unescalated if like_for_like else case.loop,
            "end_to_end": case.end_to_end_unescalated if like_for_like else case.end_to_end,
            "plain_loop": case.plain_best}  # fmt: skip
        case.best_batch = args.batch
        for call in calls.values():
            bench_zoo.timed(call)
        times: dict[str, list[float]] = {name: [] for name in calls}
        for _ in range(args.repeats):
            for name, call in calls.items():
                times[name].append(bench_zoo.timed(call))
    figures: dict[str, Any] = {f"{name}_seconds": statistics.median(t) for name, t in times.items()}
    figures["twin_first_pass_seconds"] = twin
    for name in ("loop", "end_to_end") if calls else ():
        ratios = (p / q for p, q in zip(times["plain_loop"], times[name], strict=True))
        figures[f"{name}_over_plain_loop"] = statistics.median(ratios)
    print(json.dumps(figures | {"escalate_false": like_for_like, "load_average": os.getloadavg()}))


def twin_first_pass(case: Any, timed: Any, torch: Any) -> float:
    """The round-off twin made and its first identity pass, timed as a run pays them: once, in a fresh process, right
    after the model is built (each side's Adapter.twin and Sentence.forward, and its bench_zoo's timer)."""
    adapter = case.adapters[0]
    identity = torch.arange(case.n)[None]
    with torch.inference_mode():
        return float(timed(lambda: adapter.twin().sentence(case.words).forward(identity)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="HEAD", help="the commit to measure against")
    parser.add_argument("--families", nargs="+", choices=list(BATCH), default=["gpt2", "bert"])
    parser.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32")
    parser.add_argument("--rounds", type=int, default=2, help="processes per side, the sides alternating")
    parser.add_argument("--repeats", type=int, default=3, help="timed rounds of each loop in a process")
    parser.add_argument("--words", type=int, default=8)
    parser.add_argument("--orders", type=int, default=1024)
    parser.add_argument("--shape", default="768,12,12", help="d_model,n_heads,n_layers")
    parser.add_argument("--batch", type=int, default=0, help="the plain loop's batch (default: per family)")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument(
        "--twin-only",
        action="store_true",
        help="time only the round-off twin made and its first pass, in each side's fresh processes",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    changed = git("--no-optional-locks", "status", "--porcelain", "--", "orderlab", "benchmarks")
    here = git("rev-parse", "HEAD").strip() + (" with changes" if changed else "")
    figures: dict[str, Any] = {"this_checkout": here, "words": args.words, "orders": args.orders,
                               "shape": args.shape, "rounds": args.rounds, "repeats": args.repeats,
                               "load_average_at_start": os.getloadavg()}  # fmt: skip
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch)
        figures["base"] = exported(args.base, base)
        for family in args.families:
            rounds: dict[str, list[dict[str, Any]]] = {"base": [], "this_checkout": []}
            for _ in range(args.rounds):
                for name, root in (("base", base), ("this_checkout", ROOT)):
                    rounds[name].append(side(root, args, family))
                    print(f"{family} {args.dtype} {name}: {shown(rounds[name][-1])}", flush=True)
            figures[family] = {"plain_loop_batch": args.batch or BATCH[family], **rounds}
            against_plain = () if args.twin_only else ("loop", "end_to_end")
            for what in against_plain:
                for name, runs in rounds.items():
                    ratio = statistics.median(r[f"{what}_over_plain_loop"] for r in runs)
                    figures[family][f"{name}_{what}_over_plain_loop"] = ratio
            for what in (*against_plain, "twin_first_pass"):
                # the same work on both sides, round by round: how much faster this checkout is than the base
                figures[family][f"base_{what}_over_this_{what}"] = statistics.median(
                    b[f"{what}_seconds"] / t[f"{what}_seconds"]
                    for b, t in zip(rounds["base"], rounds["this_checkout"], strict=True)
                )
    figures["load_average_at_end"] = os.getloadavg()
    from bench_zoo import save  # here, not at the top: a side's process imports its own tree's bench_zoo

    earlier = json.loads(args.results.read_text()).get("against_base", {}) if args.results.is_file() else {}
    key = f"{args.dtype}_twin_only" if args.twin_only else args.dtype
    save(args.results, "against_base", earlier | {key: figures})
    print(f"wrote {args.results} ('against_base', {key!r})")


def shown(figures: dict[str, Any]) -> str:
    """A process's figures, as the terminal shows them."""
    twin = f"twin made and its first pass {figures['twin_first_pass_seconds']:.2f} s"
    if "loop_over_plain_loop" not in figures:
        return twin
    return (
        f"loop {figures['loop_over_plain_loop']:.2f}x, end to end {figures['end_to_end_over_plain_loop']:.2f}x "
        f"the plain loop; {twin}"
    )


if __name__ == "__main__":
    main()
