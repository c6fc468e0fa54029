"""A GPU check in one command, for the first minutes a CUDA machine is at hand (issue 43).

On a CUDA machine, each step timed and its outcome kept whatever the others do, in order of need:
  1. the tests that need a GPU (every test module that asks torch.cuda.is_available(); --quick: those named cuda),
  2. `orderlab check --device cuda` of two shipped specs against their CPU baselines,
  3. the card's measured rates in float32 and bfloat16, which `validate --plan --device cuda` prices with,
  4. in float32, then in bfloat16 (--quick: the all-orders run in float32 only):
     - the 40,320-order 8-word GPT-2 run (12 x 768 x 12, ablations trained and zero, 80,642 sequences) end to end
       against the best plain transformers loop over the same sequences, both timed from the same start (library
       imported, model built on the card), with the run's time by stage (a clock around each) and the plan's time;
       then the same run, and its first 1,024 orders, timed unprofiled each way its passes can go: walking its
       prefixes depth by depth, with its top depths packed in one call (ORDERLAB_PACKED_TOKENS) and dense
       (ORDERLAB_PREFIX_WALK), and the small run packed with its walk's calls captured by inductor
       (ORDERLAB_CAPTURE), twice,
     - bench_zoo.py on the card against the best plain loop in the same dtype (--quick: its own --quick, gpt2 and
       bert at 7 words, one round, 512 orders),
  5. (not --quick) `orderlab check --device cuda` of the other shipped specs that load there (those whose extra is
     missing, as the packaged MiniLM's, are left out, with why).
--budget SECONDS bounds the whole check (a lent card's minutes are few): a command step may take what is left, and a
step that would start with too little left is recorded as skipped. The figures are written after every step, so that
a check cut short keeps what it measured: under "zoo_cuda" of benchmarks/results.json (bench_zoo's own figures
inside), the file's other keys left as they are; exit 1 if a step failed. --dry-run runs the same steps on the CPU at
tiny sizes (tests/e2e/test_gpu_check.py runs it, so that this script cannot rot) and writes "zoo_cuda_dry_run".

    bash .whl/on-gpu.sh python3 benchmarks/gpu_check.py [--quick]     # or: make gpu-check ARGS=--quick
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

import torch
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_zoo import plan_against_run, save, stage_shares  # noqa: E402  (as the zoo bench measures them)

from orderlab.plan.decisions import MAX_PACKED_TOKENS  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results.json"
WORDS = "the old dog chased a red ball today".split()
QUICK_SPECS = ("experiments/dog_bites_man.yaml", "experiments/zoo_causal.yaml")
DRY_SPECS = ("experiments/worked_example.yaml",)
TAIL = 2_000  # characters of a step's output kept
FIRST_LOOK = 150.0  # seconds the tests, and two specs' check, may each take: the figures after them need the card too
PACKED_TOKENS = 512  # the all-orders run again with its top depths packed in one call (Decisions.packed_tokens)
WAYS = {  # how a causal model's passes can go, as the settings force them (plan/decisions.py)
    "walked": {"ORDERLAB_PREFIX_WALK": "always", "ORDERLAB_PACKED_TOKENS": "0"},
    "packed": {"ORDERLAB_PREFIX_WALK": "always", "ORDERLAB_PACKED_TOKENS": str(PACKED_TOKENS)},
    # as many top depths packed as the setting allows: at 1,024 orders the card is launch-bound (session 24: loops
    # 0.27-1.06x the plain loop's best batch), and fewer, larger calls are what it lacks
    "packed_most": {"ORDERLAB_PREFIX_WALK": "always", "ORDERLAB_PACKED_TOKENS": str(MAX_PACKED_TOKENS)},
    "dense": {"ORDERLAB_PREFIX_WALK": "never"},
}
SMALL_RUN_ORDERS = 1_024  # the all-orders run's first orders again, as bench_zoo's cases
# The small run again packed with its walk's calls captured (ORDERLAB_CAPTURE: inductor on a card, dynamo's eager
# backend in a dry run), twice in one process: the first pays the compilation, the second replays its graphs
CAPTURED = {"ORDERLAB_PREFIX_WALK": "always", "ORDERLAB_PACKED_TOKENS": str(PACKED_TOKENS)}


def step(command: list[str], timeout: float) -> dict[str, Any]:
    """A command run from the project root: its exit code, seconds and the end of its output."""
    started = time.perf_counter()
    try:
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False)
        code, output = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as expired:
        code, output = 124, f"timed out after {timeout:.0f} s: {expired.output or ''}"
    seconds = time.perf_counter() - started
    print(f"{'ok  ' if code == 0 else 'FAIL'} {seconds:6.1f} s  {' '.join(command[1:])}", flush=True)
    return {"command": " ".join(command), "exit_code": code, "seconds": seconds, "output_tail": output[-TAIL:]}


def gpu_test_files() -> list[str]:
    """The test modules that ask for a GPU, wherever the tests are laid out."""
    return sorted(str(path.relative_to(ROOT)) for path in (ROOT / "tests").rglob("test_*.py")
                  if "torch.cuda.is_available()" in path.read_text())  # fmt: skip


def tests_step(quick: bool, dry: bool, timeout: float) -> dict[str, Any]:
    files = gpu_test_files()
    selection = ["--collect-only"] if dry else (["-k", "cuda"] if quick else [])  # the CPU collects, never runs them
    workers = "0" if dry else "4"  # a card's machine has cores to spare; the CPU only collects
    plugins = ["-p", "no:cacheprovider", "-p", "no:benchmark"]  # pytest-benchmark, where installed, fails under xdist
    return step([sys.executable, "-m", "pytest", "-q", "-n", workers, *plugins, *selection, *files], timeout)


def check_step(device: str, specs: list[str], timeout: float) -> dict[str, Any]:
    return step([sys.executable, "-m", "orderlab", "check", "--device", device, *specs], timeout)


def other_specs_step(device: str, timeout: float) -> dict[str, Any]:
    """`orderlab check` of the shipped specs that --quick's check leaves out and that load here: a spec whose extra is
    missing (the packaged MiniLM, ~84 MB, cannot travel to a card's machine with the wheels) is left out, with why."""
    from orderlab.errors import OrderlabError
    from orderlab.spec.load import load_spec

    def refusal(path: Path) -> str | None:
        try:
            load_spec(path)
        except OrderlabError as error:
            return str(error)
        return None

    paths = [
        path for path in sorted((ROOT / "experiments").glob("*.yaml")) if str(path.relative_to(ROOT)) not in QUICK_SPECS
    ]
    left_out = {path.name: why for path in paths if (why := refusal(path))}
    specs = [str(path.relative_to(ROOT)) for path in paths if path.name not in left_out]
    return check_step(device, specs, timeout) | {"left_out": left_out}


def rates_step(device: torch.device) -> dict[str, Any]:
    """The card's measured rates in float32 and bfloat16 (a large matmul's FLOP/s, a small op's round trip) and the
    memory free there: what `validate --plan --device` prices a run with, kept so that the GPU cost model can be
    calibrated against this check's measured times."""
    from orderlab.commands.pricing import priced_device

    priced = priced_device(device, "float32", "bfloat16")
    return {"name": priced.name, "memory_bytes": priced.memory,
            "rates": {dtype: rate.model_dump() for dtype, rate in priced.rates.items()}}  # fmt: skip


def bench_step(device: str, dtype: str, quick: bool, dry: bool, timeout: float) -> dict[str, Any]:
    """bench_zoo.py in `dtype` on the device, its figures read back from a scratch results file."""
    with tempfile.TemporaryDirectory() as scratch:
        results = Path(scratch) / "results.json"
        dry_sizes = ["--shape", "32,2,2", "--orders", "24", "--quick", "--families", "gpt2"]
        sizes = dry_sizes if dry else ["--quick", "--orders", "512"] if quick else ["--rounds", "2", "--lengths", "8"]
        outcome = step([sys.executable, "benchmarks/bench_zoo.py", "--device", device, "--dtype", dtype,
                        "--results", str(results), *sizes], timeout)  # fmt: skip
        figures = json.loads(results.read_text()) if results.is_file() else {}
    return outcome | {"figures": next(iter(figures.values()), None)}


def full_run_step(device: torch.device, dtype: str, dry: bool) -> dict[str, Any]:
    """All orders of 8 words (dry: 5) through GPT-2 with two ablations, orderlab end to end against the best plain
    loop over the same sequences, each from a built model on the device, with the run's stages."""
    from orderlab.commands.run import write_experiment
    from orderlab.measure.run_options import RunOptions
    from orderlab.models.hf.loader import PretrainedBackend, Seeded

    n, shape = (5, (32, 2, 2)) if dry else (8, (768, 12, 12))
    d_model, heads, layers = shape
    spec = {"name": "gpu_check_all_orders", "seed": 0, "rows": "summary",
            "metrics": ["equivariance", "invariance", "lm_logprob"],
            "model": {"kind": "hf", "family": "gpt2", "d_model": d_model, "n_heads": heads, "n_layers": layers,
                      "dtype": dtype, "position_embeddings": ["trained", "zero"]},
            "inputs": [{"sentence": " ".join(WORDS[:n]), "permutations": "all"}]}  # fmt: skip
    with tempfile.TemporaryDirectory() as scratch:
        loaded = written_spec(spec, Path(scratch) / "spec.yaml")
        options = RunOptions(device, force=True)
        seconds, stages = stage_shares(lambda: (write_experiment(loaded, Path(scratch) / "out", options),
                                                synchronize(device)))  # fmt: skip
        ways = ways_timed(loaded, Path(scratch) / "all", device)
        few = min(SMALL_RUN_ORDERS, math.factorial(n) // 5)  # a small run, where a card's launches weigh most
        first = [list(order) for order in itertools.islice(itertools.permutations(range(n)), few)]
        small = spec | {
            "name": "gpu_check_few_orders",
            "inputs": [{"sentence": " ".join(WORDS[:n]), "permutations": first}],
        }
        small_ways = ways_timed(written_spec(small, Path(scratch) / "small.yaml"), Path(scratch) / "few", device,
                                captured=True)  # fmt: skip
        plan = plan_against_run(loaded, Path(scratch), math.factorial(n), device)  # `orderlab run`, a fresh process
    started = time.perf_counter()
    backend = PretrainedBackend(Seeded(d_model, heads, layers, tuple(sorted(set(WORDS[:n]))), 0), dtype, device,
                                family="gpt2")  # fmt: skip
    built = time.perf_counter() - started
    tokens = backend.word_tokens(WORDS[:n]).ids
    orders = torch.tensor(list(itertools.permutations(range(n))))
    ids = torch.cat([torch.full((len(orders), 1), tokens[0]), torch.tensor(tokens[1:])[orders]], dim=1).to(device)
    sequences = 2 * (len(orders) + 1)  # two ablations, each with its reference
    batches = (16, 64, 256) if dry else (256, 1024, 4096)
    plain_seconds(backend.model, ids[: batches[0]], batches[0], device)  # warm-up: kernels chosen, memory pooled
    trial = {size: plain_seconds(backend.model, ids[: max(batches)], size, device) for size in batches}
    best = min(trial, key=trial.__getitem__)
    plain = built + 2 * plain_seconds(backend.model, ids, best, device)
    figures = {"words": n, "orders": math.factorial(n), "sequences": sequences, "dtype": dtype,
               "orderlab_end_to_end_seconds": seconds, "plain_loop_seconds": plain, "plain_loop_best_batch": best,
               "plain_loop_build_seconds": built, "speedup_over_best_plain_loop": plain / seconds,
               "orderlab_sequences_per_s": sequences / seconds, "stages": stages,
               "plan": plan,
               "packed_top_depths": {"packed_tokens": PACKED_TOKENS, "walked_seconds": ways["walked"]["seconds"],
                                     "packed_seconds": ways["packed"]["seconds"],
                                     "speedup_over_the_walk": ways["walked"]["seconds"] / ways["packed"]["seconds"],
                                     "prefix_sharing": ways["packed"]["prefix_sharing"]},
               "ways": ways, f"ways_at_{few}_orders": small_ways}  # fmt: skip
    print(f"ok  {seconds:6.1f} s  all {math.factorial(n):,} orders of {n} words, {dtype}: {plain / seconds:.2f}x the "
          f"best plain loop ({plain:.1f} s, batches of {best})", flush=True)  # fmt: skip
    return figures


def written_spec(data: dict[str, Any], path: Path) -> Any:
    from orderlab.spec.load import load_spec

    path.write_text(yaml.safe_dump(data, sort_keys=False, default_flow_style=None))
    return load_spec(path)


def ways_timed(loaded: Any, out: Path, device: torch.device, captured: bool = False) -> dict[str, dict[str, Any]]:
    """One run of the spec, unprofiled, each way a causal model's passes can go (WAYS; captured: and CAPTURED twice),
    with how its manifest says they went: what decides whether a card should walk, pack, capture or run dense
    (plan/decisions.py)."""
    from orderlab.commands.run import write_experiment
    from orderlab.measure.run_options import RunOptions

    timings = {}
    capture = {"ORDERLAB_CAPTURE": "inductor" if device.type == "cuda" else "eager"} | CAPTURED
    ways = WAYS | ({"captured": capture, "captured_again": capture} if captured else {})
    for way, settings in ways.items():
        with mock.patch.dict(os.environ, settings):
            started = time.perf_counter()
            write_experiment(loaded, out / way, RunOptions(device, force=True))
            synchronize(device)
            seconds = time.perf_counter() - started
        manifest = json.loads((out / way / "manifest.json").read_text())
        compiled = manifest.get("torch_compile")  # a captured way's calls (ORDERLAB_CAPTURE); else None
        timings[way] = {"seconds": seconds, "prefix_sharing": manifest["prefix_sharing"], "torch_compile": compiled}
    return timings


def kept(measure: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """An in-process step's figures, or its failure as a step's record: the later steps still run."""
    try:
        return measure() | {"exit_code": 0}
    except Exception as error:  # a check reports every step; one failure must not hide the others
        print(f"FAIL {type(error).__name__}: {error}", flush=True)
        return {"exit_code": 1, "error": f"{type(error).__name__}: {str(error)[:TAIL]}"}


def plain_seconds(model: Any, ids: torch.Tensor, batch: int, device: torch.device) -> float:
    """The loop a user would write over prepared ids: hidden states and the LM's log-softmax, batch by batch."""
    started = time.perf_counter()
    with torch.inference_mode():
        for start in range(0, len(ids), batch):
            out = model(input_ids=ids[start : start + batch], output_hidden_states=True)
            torch.log_softmax(out.logits.float(), dim=-1)
        synchronize(device)
    return time.perf_counter() - started


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a first look, in under 5 minutes on one card")
    parser.add_argument("--dry-run", action="store_true", help="the same steps on the CPU at tiny sizes")
    parser.add_argument("--results", type=Path, default=RESULTS, help="the JSON file the figures go into")
    parser.add_argument("--budget", type=float, default=None, help="seconds the whole check may take (default: none)")
    parser.add_argument("--only", nargs="+", default=None, metavar="STEP", help="these steps alone (e.g. to rerun "
                        "those that failed): gpu_tests check device_rates all_orders_<dtype> bench_zoo_<dtype> "
                        "check_other_specs")  # fmt: skip
    args = parser.parse_args()
    if not args.dry_run and not torch.cuda.is_available():
        print("gpu_check: no CUDA device here; expected a GPU machine (or --dry-run)", file=sys.stderr)
        return 2
    device = torch.device("cpu" if args.dry_run else "cuda")
    quick, dry = args.quick, args.dry_run
    limit = 120.0 if quick else 600.0  # seconds a step may take (a dry run's on a loaded CPU: as long as a full one's;
    # bench_zoo's tiny dry run took 600 s at load 25 on 2 cores, about a minute quiet)
    figures: dict[str, Any] = {
        "device": device.type, **({"gpu": torch.cuda.get_device_name(device)} if device.type == "cuda" else {}),
        "torch": torch.__version__, "python": sys.version.split()[0], "quick": quick, "dry_run": dry,
        "budget_seconds": args.budget, "load_average_at_start": os.getloadavg(),
        "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
    }  # fmt: skip
    key = "zoo_cuda_dry_run" if dry else "zoo_cuda"
    clock = Budget(args.budget)
    steps = planned_steps(device, quick, dry, limit)
    unknown = set(args.only or ()) - {name for name, _ in steps}
    if unknown:
        print(f"gpu_check: no step named {', '.join(sorted(unknown))}; expected some of "
              f"{', '.join(name for name, _ in steps)}", file=sys.stderr)  # fmt: skip
        return 2
    for name, run_step in steps:
        if args.only and name not in args.only:
            continue
        figures[name] = clock.run(run_step)
        save(args.results, key, figures | {"seconds": clock.spent(), "partial": True})
    figures["seconds"] = clock.spent()
    figures["load_average_at_end"] = os.getloadavg()
    failed = [name for name, value in figures.items() if isinstance(value, dict) and value.get("exit_code", 0) != 0]
    figures["failed_steps"] = failed
    figures["skipped_steps"] = [
        name for name, value in figures.items() if isinstance(value, dict) and "skipped" in value
    ]
    save(args.results, key, figures)
    print(f"{figures['seconds']:.0f} s in all; failed: {', '.join(failed) or 'none'}; skipped: "
          f"{', '.join(figures['skipped_steps']) or 'none'}; wrote {args.results} ({key!r})")  # fmt: skip
    return 1 if failed else 0


Step = Callable[[float], dict[str, Any]]  # a step given the seconds it may take


def planned_steps(device: torch.device, quick: bool, dry: bool, limit: float) -> list[tuple[str, Step]]:
    """The check's steps in order of need: correctness on the card, then float32's figures, then bfloat16's, then the
    shipped specs that a quick check leaves out."""
    kind = device.type
    first_specs = list(DRY_SPECS if dry else QUICK_SPECS)
    steps: list[tuple[str, Step]] = [
        ("gpu_tests", lambda left: tests_step(quick, dry, min(limit, FIRST_LOOK, left))),
        ("check", lambda left: check_step(kind, first_specs, min(limit, FIRST_LOOK, left))),
        ("device_rates", lambda left: kept(lambda: rates_step(device))),
    ]
    bench_limit = (4 if dry else 2) * limit
    for dtype in ("float32",) if dry else ("float32", "bfloat16"):
        if dtype == "float32" or not quick:  # the all-orders run's dtypes
            steps.append((f"all_orders_{dtype}", lambda left, dtype=dtype: kept(
                lambda: full_run_step(device, dtype, dry))))  # fmt: skip
        steps.append((f"bench_zoo_{dtype}", lambda left, dtype=dtype: bench_step(
            kind, dtype, quick, dry, min(bench_limit, left))))  # fmt: skip
    if not (quick or dry):
        steps.append(("check_other_specs", lambda left: other_specs_step(kind, min(limit, left))))
    return steps


class Budget:
    """The seconds a check may take: a step starts only with at least MIN_STEP_SECONDS of them left."""

    MIN_STEP_SECONDS = 30.0

    def __init__(self, seconds: float | None):
        self.seconds, self.started = seconds, time.perf_counter()

    def spent(self) -> float:
        return time.perf_counter() - self.started

    def run(self, run_step: Step) -> dict[str, Any]:
        left = math.inf if self.seconds is None else self.seconds - self.spent()
        if left < self.MIN_STEP_SECONDS:
            print(f"skip {left:6.1f} s left of the budget", flush=True)
            return {"skipped": f"{max(left, 0.0):.0f} s of the {self.seconds:.0f} s budget left"}
        return run_step(left)


if __name__ == "__main__":
    sys.exit(main())
