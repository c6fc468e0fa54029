"""How long an `orderlab` process takes to end once its command is done, with and without its `gc.freeze()`.

The interpreter's shutdown collects every object still tracked; after a zoo run, with torch and transformers
imported, about 420,000 of them, and over a second that does nothing for the user. The command line freezes them
first (report/command_line.py, run_as_process). Each round runs the same command in two fresh processes,
alternating: one through cli.main as it is ("frozen"), one with gc.freeze made a no-op ("collected", the shutdown as
before). A process prints the time as its last atexit hook runs (registered first, so run last); what follows is the
shutdown itself (`shutdown_seconds`). `total_seconds` is the whole process, start to end. Figures go under "exit" in
--results.

    python benchmarks/bench_exit.py [--spec experiments/zoo_causal.yaml] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_zoo import save  # noqa: E402  (the same results file, written the same way)

RESULTS = ROOT / "benchmarks" / "results.json"
SIDES = ("frozen", "collected")
CHILD = """
import atexit, gc, sys, time
if sys.argv[1] == "collected":
    gc.freeze = lambda: None  # the shutdown as before the command line froze what it made
atexit.register(lambda: print(f"{time.time():.6f}", flush=True))  # registered first: the last hook to run
sys.argv = ["orderlab", "run", sys.argv[2], "--out", sys.argv[3], "-q", "--force"]
from orderlab.cli import main
main()
"""


def one_process(side: str, spec: Path, out: Path) -> dict[str, float]:
    """One fresh `orderlab run` of the spec: its whole time and its shutdown after the last atexit hook."""
    started = time.time()
    done = subprocess.run([sys.executable, "-c", CHILD, side, str(spec), str(out)], cwd=ROOT, capture_output=True,
                          text=True, check=False)  # fmt: skip
    ended = time.time()
    if done.returncode != 0:
        raise SystemExit(f"bench_exit: the {side} run failed: {done.stderr.strip()[-500:]}")
    hooks_done = float(done.stdout.strip().splitlines()[-1])
    return {"total_seconds": ended - started, "shutdown_seconds": ended - hooks_done}


def measure(spec: Path, rounds: int) -> dict[str, Any]:
    """Both sides, alternating round by round; per side its rounds and their medians."""
    runs: dict[str, list[dict[str, float]]] = {side: [] for side in SIDES}
    with tempfile.TemporaryDirectory() as scratch:
        for round_ in range(rounds):
            for side in SIDES if round_ % 2 == 0 else SIDES[::-1]:
                runs[side].append(one_process(side, spec, Path(scratch)))
                print(f"round {round_ + 1} {side}: " + ", ".join(f"{k} {v:.2f}" for k, v in runs[side][-1].items()),
                      flush=True)  # fmt: skip
    medians = {side: {key: statistics.median(run[key] for run in runs[side]) for key in runs[side][0]}
               for side in SIDES}  # fmt: skip
    frozen, collected = medians["frozen"], medians["collected"]
    return {"rounds": runs, "medians": medians,
            "shutdown_saved_seconds": collected["shutdown_seconds"] - frozen["shutdown_seconds"],
            "total_collected_over_frozen": collected["total_seconds"] / frozen["total_seconds"]}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", type=Path, default=ROOT / "experiments" / "zoo_causal.yaml", help="the spec run")
    parser.add_argument("--rounds", type=int, default=3, help="rounds; each runs both sides, alternating")
    parser.add_argument("--results", type=Path, default=RESULTS, help="the JSON file the figures go into")
    args = parser.parse_args()
    spec = args.spec.resolve()
    figures: dict[str, Any] = {"spec": str(spec.relative_to(ROOT) if spec.is_relative_to(ROOT) else spec),
                               "cores": os.cpu_count(), "load_average_at_start": os.getloadavg()}  # fmt: skip
    figures |= measure(args.spec, args.rounds)
    figures["load_average_at_end"] = os.getloadavg()
    save(args.results, "exit", figures)
    frozen, collected = figures["medians"]["frozen"], figures["medians"]["collected"]
    print(
        f"shutdown {collected['shutdown_seconds']:.2f} s -> {frozen['shutdown_seconds']:.2f} s; whole run "
        f"{collected['total_seconds']:.2f} s -> {frozen['total_seconds']:.2f} s (medians); wrote {args.results}"
    )


if __name__ == "__main__":
    main()
