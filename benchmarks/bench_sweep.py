"""Sweep speed and memory: torch.mm at the sweep's shapes vs a naive loop vs orderlab's streaming runner.

Stack: 4 layers, d_model 128, 4 heads, FFN 512 (GELU), pre-LN, residual, no encoding, over the
permutations of an 8-word sentence. FLOPs per sequence (matmuls only, 2 per multiply-add):
    L * (24 n d^2 + 4 n^2 d)   (q, k, v, o: 8 n d^2; FFN: 16 n d^2; scores and weights @ v: 4 n^2 d)
Peak RSS is read from VmHWM in /proc/self/status of small fresh processes, one per sentence length.
Each timing is repeated (--rounds, default 3) with runner, peak and naive loop back to back; the
medians are reported, ratios as the median of the per-round ratios. Each stage prints its line as it ends.

    python benchmarks/bench_sweep.py            # writes benchmarks/results.json, prints a table (make bench)
    python benchmarks/bench_sweep.py --quick    # a one-minute look: 6 words, one round, no torch.compile, no file
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import torch

from orderlab.core import permutations as perms
from orderlab.core.text import tokenize
from orderlab.measure.adapters import build_adapters
from orderlab.measure.loop import MeasuringLoop, tune_allocator
from orderlab.measure.sweep_measure import SweepMeasurement
from orderlab.metrics import maths as M
from orderlab.models.batching import aligned_batch
from orderlab.models.devices import CPU
from orderlab.models.prefix_trie import distinct_prefixes
from orderlab.models.stack_builder import word_vectors
from orderlab.plan.chunks import ROW_ALIGNMENT
from orderlab.plan.decisions import Decisions
from orderlab.spec.schema import Spec

ROOT = Path(__file__).resolve().parents[1]
SPEC_FILE = ROOT / "spec.yaml"  # where an inline spec's relative paths would start (it has none)
WORDS = [
    "the",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "lazy",
    "dogs",
    "today",
]  # distinct words; the first n are used
MODEL = {"d_model": 128, "n_heads": 4, "n_layers": 4, "ffn_mult": 4, "norm": "pre", "residual": True}
METRICS = ["equivariance"]  # no attention maps asked for: the runner may use fused attention
EVERY_METRIC = ["equivariance", "invariance", "attention", "token_shift"]
TARGETS = {
    "fraction_of_matmul_bound": 0.8, "speedup_over_naive": 12.0, "prefix_sharing_speedup": 2.5,
    "rss_growth_mb": 100.0, "cli_seconds": 0.3,
}  # fmt: skip
PROFILED = {  # torch.profiler op names -> the part of a forward they are
    "matmuls": ("aten::mm", "aten::addmm", "aten::bmm"),
    "attention (fused kernel)": ("aten::_scaled_dot_product_flash_attention_for_cpu",),
    "GELU": ("aten::gelu", "aten::gelu_"),
    "LayerNorm": ("aten::native_layer_norm",),
    "gathers and copies": ("aten::index", "aten::index_select", "aten::copy_", "aten::cat", "aten::clone"),
    "adds": ("aten::add", "aten::add_"),
    "products and sums (shared prefixes' one-query attention; metrics)": ("aten::mul", "aten::sum", "aten::_softmax"),
}


def flops_per_sequence(n: int, d: int = 128, layers: int = 4) -> int:
    return layers * (24 * n * d * d + 4 * n * n * d)


def sweep_spec(n: int, dtype: str, metrics: list[str] = METRICS, causal: bool = False) -> Spec:
    return Spec.model_validate({
        "model": MODEL | {"dtype": dtype, "causal": causal}, "encodings": ["none"], "metrics": metrics,
        "rows": "summary",
        "inputs": [{"sentence": " ".join(WORDS[:n]), "permutations": "all"}],
    })  # fmt: skip


def matmul_peak(dtype: torch.dtype, rows: int, seconds: float = 1.0) -> dict:
    """Best GFLOP/s of torch.mm (into a reused buffer) at the stack's three matmul shapes."""
    d, f = 128, 512
    rates = {}
    for k, m in ((d, d), (d, f), (f, d)):  # projections, FFN in, FFN out
        a, b = torch.randn(rows, k, dtype=dtype), torch.randn(k, m, dtype=dtype)
        out = torch.empty(rows, m, dtype=dtype)
        torch.mm(a, b, out=out)
        best, deadline = math.inf, time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            started = time.perf_counter()
            for _ in range(5):
                torch.mm(a, b, out=out)
            best = min(best, (time.perf_counter() - started) / 5)
        rates[f"{rows}x{k} @ {k}x{m}"] = 2 * rows * k * m / best / 1e9
    return {"gflops": max(rates.values()), "by_shape": rates}


def matmul_bound(dtype: torch.dtype, chunk: int, n: int, seconds: float = 1.0, layers: int = 4) -> dict:
    """Sequences/s of the forward's own matmuls alone, at the runner's chunk shape: the bound the runner can reach.

    Per layer, as the stack runs them: the fused q|k|v projection (R x d @ d x 3d), the output projection
    (R x d @ d x d), FFN in (R x d @ d x 4d) and FFN out (R x 4d @ 4d x d), R = chunk * n rows padded to
    whole row tiles as the runner pads them; each into a reused buffer, best of repeated bursts.
    """
    d, f = 128, 512
    rows = aligned_rows(chunk, n)
    x, wide = torch.randn(rows, d, dtype=dtype), torch.randn(rows, f, dtype=dtype)
    shapes = [(x, d, 3 * d), (x, d, d), (x, d, f), (wide, f, d)]
    steps = [(a, torch.randn(k, m, dtype=dtype), torch.empty(rows, m, dtype=dtype)) for a, k, m in shapes]

    def forward_matmuls() -> None:
        for _ in range(layers):
            for a, w, out in steps:
                torch.mm(a, w, out=out)

    forward_matmuls()
    best, deadline = math.inf, time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        started = time.perf_counter()
        forward_matmuls()
        best = min(best, time.perf_counter() - started)
    return {"sequences_per_s": chunk / best, "gflops": chunk * flops_per_sequence(n) / best / 1e9}


def aligned_rows(chunk: int, n: int) -> int:
    """Rows of one chunk's matmuls after the runner pads them to whole row tiles (orderlab.models.batching)."""
    return aligned_batch(torch.empty(chunk, n, 0), ROW_ALIGNMENT).shape[0] * n


def naive_loop(dtype: str, n: int, count: int) -> float:
    """Sequences/s of one forward call per permutation (same stack, same metric) over `count` permutations."""
    spec = sweep_spec(n, dtype)
    stack = build_adapters(spec, torch.device("cpu"), SPEC_FILE)[0].stack
    x = word_vectors(spec, tokenize(spec.inputs[0].sentence)).to(dtype=stack.dtype)  # (n, d)
    with torch.inference_mode():
        reference = stack(x[None])
        chosen = list(itertools.islice(itertools.permutations(range(n)), count))
        permutations = torch.tensor(chosen, dtype=torch.long)  # (count, n)
        started = time.perf_counter()
        for slots in permutations:
            output = stack(x[slots][None])
            for h_px, h_x in zip(output.hidden, reference.hidden, strict=True):
                float(M.equivariance_error(h_px, h_x[0], slots[None]))
        return count / (time.perf_counter() - started)


def runner(dtype: str, n: int, metrics: list[str] = METRICS) -> dict:
    """Sequences/s of orderlab's streaming runner (automatic chunk size) over all n! permutations."""
    for _ in SweepMeasurement(sweep_spec(5, dtype, metrics)).frames():  # warm-up on 5! permutations
        pass
    spec = sweep_spec(n, dtype, metrics)
    started = time.perf_counter()
    for _ in SweepMeasurement(spec).frames():
        pass
    seconds = time.perf_counter() - started
    chunk = build_adapters(spec, torch.device("cpu"), SPEC_FILE)[0].chunk_size(n, "attention" in metrics)
    return {"sequences_per_s": math.factorial(n) / seconds, "seconds": seconds, "chunk_size": chunk}


def causal_loop(n: int, share_prefixes: bool) -> float:
    """Sequences/s of the measuring loop over all n! orders through the causal stack, prefixes shared or dense."""
    spec = sweep_spec(n, "float32", causal=True)
    return loop_rate(spec, build_adapters(spec, CPU, SPEC_FILE, decisions=Decisions(share_prefixes, False)))


def prefix_sharing(n: int, rounds: int) -> dict:
    """Causal n! sweep, dense and with shared prefixes, interleaved round by round; the speed-up is the median ratio."""
    causal_loop(5, True), causal_loop(5, False)  # warm-up
    pairs = [(causal_loop(n, False), causal_loop(n, True)) for _ in range(rounds)]
    spec = sweep_spec(n, "float32", causal=True)
    chunk = build_adapters(spec, CPU, SPEC_FILE)[0].chunk_size(n, False)
    computed = sum(distinct_prefixes(torch.tensor(c)) for c in perms.chunks(perms.iterate("all", WORDS[:n]), chunk))
    return {
        "dense_sequences_per_s": statistics.median(dense for dense, _ in pairs),
        "shared_sequences_per_s": statistics.median(shared for _, shared in pairs),
        "prefix_sharing_speedup": statistics.median(shared / dense for dense, shared in pairs),
        "rounds": [{"dense": dense, "shared": shared} for dense, shared in pairs],
        "chunk_size": chunk, "token_states_dense": math.factorial(n) * n, "token_states_shared": computed,
        "trie_nodes": sum(math.perm(n, depth) for depth in range(1, n + 1)),
    }  # fmt: skip


def loop_rate(spec: Spec, adapters: list) -> float:
    """Sequences/s of one measuring-loop pass over the spec's permutations with these adapters."""
    started = time.perf_counter()
    for _ in MeasuringLoop(spec).frames(adapters):
        pass
    return spec_sequences(spec) / (time.perf_counter() - started)


def spec_sequences(spec: Spec) -> int:
    return sum(perms.count(item.permutations, tokenize(item.sentence)) for item in spec.sentences)


def compiled_runner(n: int, rounds: int) -> dict:
    """The float32 runner eager and through torch.compile (inductor), the same adapters timed round by round."""
    spec = sweep_spec(n, "float32")
    os.environ["ORDERLAB_COMPILE"] = "never"
    eager = build_adapters(spec, CPU, SPEC_FILE)
    os.environ["ORDERLAB_COMPILE"] = "always"
    compiled = build_adapters(spec, CPU, SPEC_FILE)
    del os.environ["ORDERLAB_COMPILE"]
    stack = compiled[0].stack  # type: ignore[attr-defined]
    x = torch.randn(64, n, 128, generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        difference = max(
            float((a - b).abs().max() / a.abs().max())
            for a, b in zip(eager[0].stack(x, False).hidden, stack(x, False).hidden, strict=True)  # type: ignore[attr-defined]
        )  # compiles here
    if stack.compile_failure:
        return {"compile_failure": stack.compile_failure}
    loop_rate(spec, eager)  # warm-up
    pairs = [(loop_rate(spec, eager), loop_rate(spec, compiled)) for _ in range(rounds)]
    return {
        "compile_seconds": stack.compile_seconds, "compiled_max_relative_difference": difference,
        "eager_sequences_per_s": statistics.median(e for e, _ in pairs),
        "compiled_sequences_per_s": statistics.median(c for _, c in pairs),
        "compiled_speedup": statistics.median(c / e for e, c in pairs),
        "rounds": [{"eager": e, "compiled": c} for e, c in pairs],
    }  # fmt: skip


def profile_runner(n: int, dtype: str = "float32") -> dict:
    """Share of the runner's CPU time per part of the forward (torch.profiler over a whole n! sweep)."""
    spec = sweep_spec(n, dtype)
    return profile_loop(spec, build_adapters(spec, CPU, SPEC_FILE))


def profile_shared(n: int) -> dict:
    """The same for the causal float32 sweep with shared prefixes (its attention is elementwise products and sums)."""
    spec = sweep_spec(n, "float32", causal=True)
    return profile_loop(spec, build_adapters(spec, CPU, SPEC_FILE, decisions=Decisions(True, False)))


def profile_loop(spec: Spec, adapters: list) -> dict:
    """Share of the measuring loop's CPU time per part (PROFILED), after a warm-up pass."""
    from torch.profiler import profile  # lazy: only the benchmark profiles

    loop_rate(spec, adapters)
    with profile() as recorded:
        loop_rate(spec, adapters)
    times = {event.key: event.self_cpu_time_total for event in recorded.key_averages()}
    total = sum(times.values())
    shares = {part: sum(times.get(op, 0) for op in ops) / total for part, ops in PROFILED.items()}
    return shares | {"everything else": 1 - sum(shares.values())}


RSS_PROBE = """
import sys
from benchmarks.bench_sweep import sweep_spec
from orderlab.models.prefix_trie import distinct_prefixes
from orderlab.measure.loop import MeasuringLoop, tune_allocator
from orderlab.measure.sweep_measure import SweepMeasurement
def hwm():
    return next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM')) / 1024
tune_allocator()
sweep = SweepMeasurement(sweep_spec({n}, 'float32', {metrics!r}))
before = hwm()
for _ in sweep.frames():
    pass
print(before, hwm())
"""


def peak_rss(n: int) -> dict:
    """VmHWM (MB) of a fresh process that imports orderlab and sweeps all n! permutations in float32."""
    metrics = ["equivariance", "invariance", "token_shift"]
    code = RSS_PROBE.format(n=n, metrics=metrics)
    line = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    before, after = map(float, line.stdout.split())
    return {"permutations": math.factorial(n), "after_imports_mb": before, "peak_mb": after}


def cli_seconds(arguments: list[str], repeats: int = 11) -> float:
    """Median wall time of the installed `orderlab` command."""
    command = [str(Path(sys.executable).with_name("orderlab")), *arguments]
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run(command, cwd=ROOT, capture_output=True, check=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def torch_imported(arguments: list[str]) -> bool:
    code = (
        "import sys\nfrom orderlab.cli import app\n"
        f"try:\n    app({arguments!r})\nexcept SystemExit:\n    pass\nprint('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return out.stdout.strip().splitlines()[-1] == "True"


def machine() -> dict:
    lines = Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").exists() else []
    cpu = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), "")
    return {
        "cpu": cpu or platform.processor(), "cores": os.cpu_count(), "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(), "python": platform.python_version(),
        "load_average_at_start": os.getloadavg(),
    }  # fmt: skip


T = TypeVar("T")


def stage(name: str, measure: Callable[[], T], figures: Callable[[T], str]) -> T:
    """Run one stage of the benchmark: its name is printed as it starts, its figures and seconds as it ends."""
    print(f"{name} ...", end=" ", flush=True)
    started = time.perf_counter()
    result = measure()
    print(f"{figures(result)} [{time.perf_counter() - started:.0f} s]", flush=True)
    return result


def round_figures(figures: dict) -> str:
    return (
        f"runner {figures['runner_sequences_per_s']:,.0f} seq/s, {figures['fraction_of_matmul_bound']:.0%} of the "
        f"matmul bound, naive {figures['naive_sequences_per_s']:,.0f} seq/s ({figures['speedup_over_naive']:.1f}x)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a one-minute look: 6 words, 1 round, no compile, no file")
    parser.add_argument("--naive", type=int, default=5040, help="permutations timed in the naive loop")
    parser.add_argument("--rounds", type=int, help="repeats of each timing; medians are reported (default 3, quick 1)")
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile comparison")
    parser.add_argument("--out", type=Path, help="figures file (default benchmarks/results.json; none with --quick)")
    args = parser.parse_args()
    n = 6 if args.quick else 8
    rounds = args.rounds or (1 if args.quick else 3)
    out = args.out or (None if args.quick else ROOT / "benchmarks/results.json")
    tune_allocator()  # before every measurement, so all three see the same allocator
    results: dict = {"machine": machine(), "sentence_tokens": n, "permutations": math.factorial(n)}
    print(f"all {n}! = {math.factorial(n):,} permutations, {rounds} round(s); load average {os.getloadavg()[0]:.1f}")
    results["flops_per_sequence"] = flops_per_sequence(n)
    results["flop_formula"] = "L * (24 n d^2 + 4 n^2 d), L=4, d=128, matmuls only, 2 FLOP per multiply-add"
    naive_count = min(args.naive, math.factorial(n))
    for dtype in ("float32", "float64"):
        timed = [
            stage(f"{dtype} round {i + 1}/{rounds}", lambda d=dtype: measure_round(d, n, naive_count), round_figures)
            for i in range(rounds)
        ]
        entry = {key: statistics.median(r[key] for r in timed) for key in timed[0] if key != "matmul_by_shape_gflops"}
        entry |= {"matmul_by_shape_gflops": timed[0]["matmul_by_shape_gflops"], "rounds": timed}
        if dtype == "float32":
            maps = stage("float32 runner, every metric", lambda: runner("float32", n, EVERY_METRIC), per_second)
            entry["runner_all_metrics_sequences_per_s"] = maps["sequences_per_s"]
        results[dtype] = entry
    results["prefix_sharing"] = stage(
        f"causal {n}!, dense and shared prefixes", lambda: prefix_sharing(n, rounds),
        lambda r: f"{r['prefix_sharing_speedup']:.2f}x ({r['shared_sequences_per_s']:,.0f} seq/s shared)",
    )  # fmt: skip
    if not (args.no_compile or args.quick):
        results["torch_compile"] = stage("torch.compile", lambda: compiled_runner(n, rounds), compile_figures)
    results["profile_float32_runner"] = stage(f"profile, {n - 1}!", lambda: profile_runner(n - 1), matmul_share)
    results["profile_causal_shared"] = stage(f"profile, causal {n - 1}!", lambda: profile_shared(n - 1), matmul_share)
    lengths = (6, 7) if args.quick else (7, 8, 9)
    results["peak_rss"] = {
        f"{k}!": stage(f"peak RSS, {k}!", lambda k=k: peak_rss(k), lambda r: f"{r['peak_mb']:.0f} MB") for k in lengths
    }
    rss = [results["peak_rss"][f"{k}!"]["peak_mb"] for k in lengths]
    results["rss_growth_mb"] = rss[-1] - rss[0]
    results["cli"] = stage("orderlab --help and validate", lambda: cli_figures(3 if args.quick else 11), cli_line)
    results["targets"] = check_targets(results)
    results["gaps"] = explain_gaps(results)
    print()
    print_table(results)
    if out is not None:
        kept = {"scale", "prefix_sharing_hf", "zoo"}  # bench_scale.py's, bench_prefix_hf.py's, bench_zoo.py's figures
        earlier = json.loads(out.read_text()) if out.is_file() else {}
        results |= {key: earlier[key] for key in kept & set(earlier)}
        out.write_text(json.dumps(results, indent=2) + "\n")
        print(f"\nwrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")


def per_second(figures: dict) -> str:
    return f"{figures['sequences_per_s']:,.0f} seq/s"


def compile_figures(figures: dict) -> str:
    if "compile_failure" in figures:
        return f"did not compile: {figures['compile_failure']}"
    return f"{figures['compiled_speedup']:.2f}x eager after {figures['compile_seconds']:.1f} s of compilation"


def matmul_share(profile: dict) -> str:
    return f"matmuls {profile['matmuls']:.0%} of the CPU time"


def cli_figures(repeats: int) -> dict:
    spec = "experiments/dog_bites_man.yaml"
    return {
        "help_seconds": cli_seconds(["--help"], repeats), "validate_seconds": cli_seconds(["validate", spec], repeats),
        "help_imports_torch": torch_imported(["--help"]), "validate_imports_torch": torch_imported(["validate", spec]),
    }  # fmt: skip


def cli_line(cli: dict) -> str:
    return f"--help {cli['help_seconds']:.2f} s, validate {cli['validate_seconds']:.2f} s"


def measure_round(dtype: str, n: int, naive_count: int) -> dict:
    """Runner, matmul peak and naive loop back to back, so their ratios share one stretch of machine load."""
    run = runner(dtype, n)
    peak = matmul_peak(getattr(torch, dtype), run["chunk_size"] * n)
    bound = matmul_bound(getattr(torch, dtype), run["chunk_size"], n)
    naive = naive_loop(dtype, n, naive_count)
    rate = run["sequences_per_s"]
    figures = {
        "matmul_peak_gflops": peak["gflops"], "matmul_by_shape_gflops": peak["by_shape"],
        "naive_sequences_per_s": naive, "naive_permutations_timed": naive_count,
        "runner_sequences_per_s": rate, "runner_seconds": run["seconds"], "chunk_size": run["chunk_size"],
        "runner_gflops": rate * flops_per_sequence(n) / 1e9, "naive_gflops": naive * flops_per_sequence(n) / 1e9,
        "matmul_bound_sequences_per_s": bound["sequences_per_s"], "matmul_bound_gflops": bound["gflops"],
    }  # fmt: skip
    figures["fraction_of_matmul_bound"] = rate / bound["sequences_per_s"]
    figures["fraction_of_peak"] = figures["runner_gflops"] / peak["gflops"]
    figures["speedup_over_naive"] = rate / naive
    return figures


def check_targets(results: dict) -> dict:
    f32, cli = results["float32"], results["cli"]
    return {
        "float32 >= 80% of the matmul bound": f32["fraction_of_matmul_bound"] >= TARGETS["fraction_of_matmul_bound"],
        "float32 >= 12x naive loop": f32["speedup_over_naive"] >= TARGETS["speedup_over_naive"],
        "prefix sharing >= 2.5x dense (causal)": (
            results["prefix_sharing"]["prefix_sharing_speedup"] >= TARGETS["prefix_sharing_speedup"]
        ),
        "peak RSS growth < 100 MB": results["rss_growth_mb"] < TARGETS["rss_growth_mb"],
        "--help < 0.3 s, no torch": cli["help_seconds"] < TARGETS["cli_seconds"] and not cli["help_imports_torch"],
        "validate < 0.3 s, no torch": (
            cli["validate_seconds"] < TARGETS["cli_seconds"] and not cli["validate_imports_torch"]
        ),
    }


def explain_gaps(results: dict) -> list[str]:
    """The causes of each missed target, from this run's own profile and load figures."""
    load = results["machine"]["load_average_at_start"][0]
    profile = results["profile_float32_runner"]
    parts = sorted(((share, part) for part, share in profile.items() if part != "matmuls"), reverse=True)
    outside = ", ".join(f"{part} {share:.0%}" for share, part in parts)
    shared = results["profile_causal_shared"]
    shared_parts = sorted(((share, part) for part, share in shared.items() if part != "matmuls"), reverse=True)
    outside_shared = ", ".join(f"{part} {share:.0%}" for share, part in shared_parts)
    sharing = results["prefix_sharing"]
    ideal = sharing["token_states_dense"] / sharing["token_states_shared"]
    causes = {
        "float32 >= 80% of the matmul bound": (
            f"by torch.profiler over the runner, matmuls are {profile['matmuls']:.0%} of its CPU time; the rest is "
            f"{outside}: work the matmul-only bound leaves out; load average {load:.1f} on "
            f"{results['machine']['cores']} cores"
        ),
        "float32 >= 12x naive loop": (
            f"the runner is bounded by the same non-matmul share ({1 - profile['matmuls']:.0%}); "
            f"load average {load:.1f} while measuring"
        ),
        "prefix sharing >= 2.5x dense (causal)": (
            f"the shared pass computes {ideal:.2f}x fewer token states; by torch.profiler over it, matmuls are "
            f"{shared['matmuls']:.0%} of its CPU time and the rest is {outside_shared}: work that does not shrink "
            f"with the token states, or shrinks less (one query per prefix, {sharing['chunk_size']} reorderings "
            f"walked depth by depth in small calls); load average {load:.1f}"
        ),
        "peak RSS growth < 100 MB": "the chunk's working set grows with the number of tokens",
        "--help < 0.3 s, no torch": f"Python, typer and rich start-up under load average {load:.1f}",
        "validate < 0.3 s, no torch": (
            "Python start-up, typer and pydantic imports and building the spec models (about 20, 60, 40 and 25 ms "
            f"by -X importtime; numpy and torch are not imported), under load average {load:.1f}"
        ),
    }
    return [f"{target}: {causes[target]}" for target, met in results["targets"].items() if not met]


def print_table(results: dict) -> None:
    n = results["sentence_tokens"]
    print(f"{results['machine']['cpu']}, {results['machine']['torch_threads']} threads, torch {torch.__version__}")
    print(f"all {n}! = {results['permutations']:,} permutations, {results['flops_per_sequence'] / 1e6:.1f} MFLOP each")
    heads = [("mm peak", "GFLOP/s"), ("mm bound", "seq/s"), ("naive", "seq/s"), ("runner", "seq/s")]
    heads += [("runner", "GFLOP/s"), ("of peak", ""), ("of bound", ""), ("vs naive", "")]
    for line in range(2):
        print(f"{'':10} " + " ".join(f"{head[line]:>9}" for head in heads))
    for dtype in ("float32", "float64"):
        e = results[dtype]
        print(
            f"{dtype:10} {e['matmul_peak_gflops']:9.1f} {e['matmul_bound_sequences_per_s']:9,.0f} "
            f"{e['naive_sequences_per_s']:9,.0f} {e['runner_sequences_per_s']:9,.0f} {e['runner_gflops']:9.1f} "
            f"{e['fraction_of_peak']:8.0%} {e['fraction_of_matmul_bound']:9.0%} {e['speedup_over_naive']:8.1f}x"
        )
    sharing = results["prefix_sharing"]
    print(
        f"causal {n}!: dense {sharing['dense_sequences_per_s']:,.0f} seq/s, shared prefixes "
        f"{sharing['shared_sequences_per_s']:,.0f} seq/s ({sharing['prefix_sharing_speedup']:.2f}x; token states "
        f"{sharing['token_states_shared']:,} vs {sharing['token_states_dense']:,})"
    )
    compiled = results.get("torch_compile", {})
    if "compiled_speedup" in compiled:
        print(
            f"torch.compile: {compiled['compiled_sequences_per_s']:,.0f} vs eager "
            f"{compiled['eager_sequences_per_s']:,.0f} seq/s ({compiled['compiled_speedup']:.2f}x) "
            f"after {compiled['compile_seconds']:.1f} s of compilation"
        )
    print("runner profile: " + ", ".join(f"{k} {v:.0%}" for k, v in results["profile_float32_runner"].items()))
    print("shared-prefix profile: " + ", ".join(f"{k} {v:.0%}" for k, v in results["profile_causal_shared"].items()))
    print("peak RSS (MB): " + ", ".join(f"{k} {v['peak_mb']:.0f}" for k, v in results["peak_rss"].items()))
    cli = results["cli"]
    print(f"orderlab --help {cli['help_seconds']:.2f} s, validate {cli['validate_seconds']:.2f} s")
    for target, met in results["targets"].items():
        print(f"  {'met   ' if met else 'MISSED'} {target}")
    for gap in results["gaps"]:
        print(f"  gap: {gap}")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
