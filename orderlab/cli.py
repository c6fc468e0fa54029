"""The `orderlab` command: parse arguments, call one function per command, render, map errors to exit codes.

Holds no science. Heavy imports (torch, pandas) happen inside the commands that compute, so
`orderlab --help` and `orderlab validate` answer without loading them.
"""

from __future__ import annotations

import contextlib
import functools
import json
import signal
import threading
import time
from collections.abc import Callable, Iterator
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    import torch

    from orderlab.measure.run_options import RunOptions
    from orderlab.plan.load import LoadedSpec
    from orderlab.report import terminal as report
    from orderlab.results.outcome import Outcome

from orderlab.errors import OrderlabError

app = typer.Typer(
    help="Measure how much an attention stack knows about word order, and where it loses it.",
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
)


def _print_version(asked: bool) -> None:
    if asked:
        from orderlab import __version__

        typer.echo(f"orderlab {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool, typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Measure how much an attention stack knows about word order, and where it loses it."""


class Device(StrEnum):
    cpu = "cpu"
    cuda = "cuda"
    auto = "auto"

    def torch(self) -> torch.device:
        """The torch.device that every layer below the CLI takes (auto: a GPU where there is one); one line where
        CUDA is asked for and absent."""
        from orderlab.models.devices import resolve_device  # lazy: --help and validate never compute

        return resolve_device(self.value)


DeviceOption = Annotated[
    Device, typer.Option(help="Where to compute: cpu, cuda, or auto (a CUDA GPU where there is one, else the CPU).")
]


def run_options(device: Device, chunk_size: int | None = None, force: bool = False) -> RunOptions:
    """A run's options from its command line: the device is checked here, once, before any work starts."""
    from orderlab.measure.run_options import RunOptions  # lazy: it imports torch

    return RunOptions(device.torch(), chunk_size, force)


class Terminated(BaseException):
    """SIGTERM, raised where the program is, so that cleanup (finally, except BaseException) runs as for Ctrl-C."""


def echo_error(error: OrderlabError) -> None:
    """'error: ...' on stderr, one line a problem (SpecErrors lists all of a spec's)."""
    for line in str(error).splitlines() or [""]:
        typer.echo(f"error: {line}", err=True)


def user_errors(command: Callable[..., Any]) -> Callable[..., Any]:
    """Turn OrderlabError into one line on stderr and exit code 2; Ctrl-C into 130, SIGTERM into 143."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            with sigterm_raises():
                return command(*args, **kwargs)
        except OrderlabError as error:
            echo_error(error)
            raise typer.Exit(error.exit_code) from None
        except KeyboardInterrupt:
            typer.echo("interrupted: no results were written", err=True)
            raise typer.Exit(130) from None
        except Terminated:
            typer.echo("terminated: no results were written", err=True)
            raise typer.Exit(143) from None

    return wrapper


@contextlib.contextmanager
def sigterm_raises() -> Iterator[None]:
    """While the block runs, SIGTERM raises Terminated (in the main thread, where signals are delivered)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _raise_terminated(signum: int, frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the cleanup short
    raise Terminated


# `orderlab run` exit code when some values came out NaN or inf: written, shown in red, never a verdict.
NON_FINITE_EXIT = 1

SpecArgument = Annotated[Path, typer.Argument(help="Experiment spec (YAML).", show_default=False)]
ForceOption = Annotated[
    bool,
    typer.Option(
        "--force", help="Also replace a folder that another orderlab command or spec wrote (never a user's files)."
    ),
]


@app.command()
@user_errors
def run(
    spec: SpecArgument,
    out: Annotated[Path, typer.Option(help="Results root; files go to OUT/<spec name>/.")] = Path("results"),
    device: DeviceOption = Device.cpu,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar and no table.")] = False,
    plot: Annotated[bool, typer.Option("--plot", help="Also draw the figures into OUT/<spec name>/figures/.")] = False,
    html: Annotated[
        bool, typer.Option("--html", help="Also write OUT/<spec name>/report.html: tables, figures, spec, manifest.")
    ] = False,
    chunk_size: Annotated[
        int | None,
        typer.Option(min=1, help="Permutations per forward pass; chosen from d_model, length and memory if omitted."),
    ] = None,
    force: ForceOption = False,
    shard: Annotated[
        str | None,
        typer.Option(
            metavar="K/N",
            help="Run only shard K of N (a fixed partition of the work) into OUT/<spec name>.shard-K-of-N/; "
            "`orderlab merge` joins the N shards into the folder the whole run writes.",
            show_default=False,
        ),
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Run shards on a local Dask cluster of this many processes, then merge them "
            "(needs the \\[dist] extra).",
            show_default=False,
        ),
    ] = None,
    scheduler: Annotated[
        str | None,
        typer.Option(
            metavar="ADDRESS",
            help="Run shards on an existing Dask cluster (tcp://host:8786), one per "
            "worker, then merge them here (needs the \\[dist] extra).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Run a spec: print the summary table and write metrics.csv, summary.csv (and more) and manifest.json.

    Exit 0 when every value is finite, 1 when some came out NaN or inf (written as nan, verdict non-finite), 2 on
    bad input.
    """
    started = time.perf_counter()
    from orderlab.plan.load import load_spec
    from orderlab.report import terminal as report

    if sum(option is not None for option in (shard, workers, scheduler)) > 1:
        raise OrderlabError("--shard, --workers and --scheduler: expected at most one of them")
    phases = report.Phases(quiet, started)
    loaded = load_spec(spec)
    options = run_options(device, chunk_size, force)
    if shard is not None:
        return run_shard(loaded, shard, out, options, phases, plot)
    with phases.phase("measuring", f"running {loaded.spec.name}", unit="seq") as advance:
        advance.note("importing torch")  # the first run of a session spends seconds here
        if workers is not None or scheduler is not None:
            from orderlab.cluster.workers import run_on_dask

            cluster = workers if workers is not None else scheduler
            assert cluster is not None
            advance.note(f"shards on {cluster} Dask worker(s)" if workers else f"shards on the Dask cluster {cluster}")
            outcome = run_on_dask(loaded, out, cluster, options.reporting(advance))
        else:
            from orderlab.commands.run import write_experiment
            from orderlab.results.paths import child

            folder = child(out, loaded.spec.name)
            outcome = write_experiment(loaded, folder, options.reporting(advance, advance.note))
    if plot:
        from orderlab.report.figures import plot_results

        with phases.phase("figures", f"drawing the figures into {outcome.folder}/figures/"):
            figures = plot_results(outcome.folder)
        if not quiet:
            typer.echo(f"wrote {len(figures)} figure(s) to {outcome.folder}/figures/")
    if html:
        from orderlab.report.html import REPORT_FILE, write_report

        with phases.phase("report", f"writing {outcome.folder / REPORT_FILE}"):
            written = write_report([outcome.folder], outcome.folder / REPORT_FILE, "--html")
        if not quiet:
            typer.echo(f"wrote {written}")
    show_outcome(outcome, phases)


def show_outcome(outcome: Outcome, phases: report.Phases) -> None:
    """The summary tables and the files written, with the command's wall time; exit 1 if some values came out NaN
    or inf."""
    from orderlab.report import terminal as report

    if not phases.quiet:
        console = report.Console()
        for table in report.run_tables(outcome.view, console.width):
            console.print(table)
        first, *others = outcome.files
        console.print(f"wrote {outcome.folder}/{first} ({outcome.rows:,} rows), {', '.join(others)} {phases.took()}")
    if outcome.non_finite:
        report.non_finite_line(outcome.non_finite, outcome.folder)
        raise typer.Exit(NON_FINITE_EXIT)


def run_shard(
    loaded: LoadedSpec, shard: str, out: Path, options: RunOptions, phases: report.Phases, plot: bool
) -> None:
    """`run --shard K/N`: one shard's folder; its summary is shown once the shards are merged."""
    from orderlab.commands.run import write_shard
    from orderlab.plan.shards import parse_shard, shard_folder_name
    from orderlab.results.paths import child

    index, count = parse_shard(shard)
    if plot:
        raise OrderlabError("--plot: a shard has no figures of its own; expected `orderlab plot` on the merged folder")
    folder = child(out, shard_folder_name(loaded.spec.name, index, count))
    with phases.phase("measuring", f"running {loaded.spec.name} shard {index}/{count}", unit="seq") as advance:
        outcome = write_shard(loaded, folder, (index, count), options.reporting(advance))
    if not phases.quiet:
        typer.echo(
            f"wrote shard {index} of {count} ({len(outcome.units)} unit(s), {outcome.rows:,} rows) to {folder} "
            f"{phases.took()}; join the shards with `orderlab merge`"
        )


@app.command()
@user_errors
def merge(
    shards: Annotated[
        list[Path],
        typer.Argument(help="The N shard folders of one run (any order).", metavar="SHARD_DIR...", show_default=False),
    ],
    out: Annotated[Path, typer.Option(help="Results root; the merged run goes to OUT/<spec name>/.")] = Path("results"),
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No table.")] = False,
    force: ForceOption = False,
) -> None:
    """Join the shards of `run --shard K/N` into the folder the whole run writes (byte for byte, on one set-up).

    Missing, repeated or mismatched shards (another spec, another N) are refused before anything is written.
    """
    started = time.perf_counter()
    from orderlab.report import terminal as report
    from orderlab.results.merge import merge_shards

    phases = report.Phases(quiet, started)
    with phases.phase("merging", f"merging {len(shards)} shard folder(s)"):
        outcome = merge_shards(shards, out, force)
    show_outcome(outcome, phases)


@app.command()
@user_errors
def validate(
    specs: Annotated[list[Path], typer.Argument(help="Spec files to check.", show_default=False)],
    plan: Annotated[
        bool,
        typer.Option(
            "--plan", help="Also print what each run will cost: memory, sequences, time and CSV sizes, per combination."
        ),
    ] = False,
    device: Annotated[
        Device,
        typer.Option(
            help="With --plan: the device to price, cpu, cuda or auto (its matmul rate in the spec's dtype is "
            "measured once, about a second, and cached)."
        ),
    ] = Device.cpu,
) -> None:
    """Check specs without running them; one line per problem, exit 2 if any.

    A spec whose run would not fit this machine (memory, a month of compute, CSVs over 2 GB) is a problem too.
    """
    from orderlab.plan.load import load_spec

    failed = False
    for path in specs:
        try:
            loaded = load_spec(path)
        except OrderlabError as error:
            echo_error(error)
            failed = True
        else:
            typer.echo(f"{path}: ok ({loaded.spec.name})")
            if plan:
                from orderlab.commands.pricing import plan_report  # lazy: it imports torch to measure the device

                for line in plan_report(loaded.spec, path, device.torch()):
                    typer.echo(f"  {line}")
    if failed:
        raise typer.Exit(2)


@app.command()
def schema() -> None:
    """Print the JSON Schema of a spec, for editor completion and validation."""
    from orderlab.spec.schema import Spec

    typer.echo(json.dumps(Spec.model_json_schema(), indent=2))


# --- the encoding zoo: list, compare side by side, measure the six properties ----------------------

EncodingsOption = Annotated[
    str,
    typer.Option(
        "--encodings",
        "-e",
        help="Comma-separated encodings, e.g. sinusoidal,rope; 'all' = every built-in; "
        "a user's own as package.module:Class.",
    ),
]
OutOption = Annotated[Path, typer.Option(help="Results root; files go to OUT/<command>/.")]
HtmlOption = Annotated[
    Path | None,
    typer.Option(help="Also write this self-contained HTML report (one file: works offline, fit for a CI artifact)."),
]


@app.command("encodings")
@user_errors
def list_encodings() -> None:
    """List every built-in positional encoding: kind, absolute or relative, parameters with defaults, reference."""
    from orderlab.encodings import ENCODINGS
    from orderlab.encodings.listing import describe
    from orderlab.report import terminal as report

    console = report.Console()
    console.print(report.encodings_table([describe(name, ENCODINGS.get(name)) for name in ENCODINGS], console.width))


@app.command("models")
@user_errors
def list_models() -> None:
    """List the model zoo's families: positions, encoder or causal LM, position ablations, real weights found locally
    (the packaged MiniLM, the Hugging Face cache). Loads and downloads nothing."""
    from orderlab.models.hf.zoo import catalog
    from orderlab.report import terminal as report

    report.Console().print(report.models_table(catalog()))


COMPARE_ROWS_SHORT = 60  # a comparison table longer than this ends with a hint to choose rows with --metric


@app.command()
@user_errors
def compare(
    specs: Annotated[
        list[Path] | None,
        typer.Argument(help="Specs to run; default: every experiments/*.yaml.", show_default=False),
    ] = None,
    encodings: EncodingsOption = "all",
    metric: Annotated[
        list[str] | None,
        typer.Option(
            "--metric",
            "-m",
            help="Rows to show, repeatable: a metric (equivariance, invariance_mean, attention_equivariance, "
            "token_shift, pair_cosine, pair_l2, ...) or a spec family (invariance, attention, pair_distance). "
            "Default: all.",
            show_default=False,
        ),
    ] = None,
    out: OutOption = Path("results"),
    device: DeviceOption = Device.cpu,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar and no table.")] = False,
    force: ForceOption = False,
    html: HtmlOption = None,
) -> None:
    """Run specs once per encoding and print one side-by-side table; write it to OUT/compare/compare.csv.

    Rows: spec input x metric x layer; columns: encodings; a cell is the worst value over
    permutations and heads, with its verdict (green ✓ within round-off, red ✗ order-sensitive).
    """
    started = time.perf_counter()
    from orderlab.commands import compare as comparing
    from orderlab.report import html as html_report
    from orderlab.report import terminal as report
    from orderlab.results.ownership import Writer, claim
    from orderlab.results.paths import child

    names = comparing.parse_encodings(encodings)
    rows = comparing.parse_metrics(metric)
    paths, skipped = (specs, []) if specs else comparing.default_specs()
    options = run_options(device)
    folder = child(out, "compare")
    if html is not None:
        html_report.check_destination(html, inputs=[*paths, folder])
    for left_out in [] if quiet else skipped:
        typer.echo(f"skipped {left_out.path}: {left_out.why}, so compare cannot swap its encodings", err=True)
    phases = report.Phases(quiet, started)
    bar = phases.phase("measuring", "comparing encodings", unit="spec")
    with claim(folder, Writer("compare"), force), bar as advance:
        result = comparing.compare(paths, names, rows, options.reporting(advance, advance.note))
        comparing.write_comparison(result, folder, options.device)
    if html is not None:
        with phases.phase("report", f"writing {html}"):
            html_report.write_report([folder], html, "--html", "compare: " + ", ".join(names))
    if not quiet:
        console = report.Console()
        title = "compare: " + ", ".join(names)
        for table in report.comparison_tables(result.table, names, title, result.dtypes, console.width):
            console.print(table)
        console.print(f"wrote {folder}/compare.csv ({len(result.table):,} rows), manifest.json {phases.took()}")
        if not metric and len(result.table) > COMPARE_ROWS_SHORT:
            console.print(f"{len(result.table):,} rows: choose some with --metric (-m equivariance -m pair_distance, "
                          "...), or read compare.csv", markup=False, highlight=False)  # fmt: skip


@app.command()
@user_errors
def properties(
    encodings: EncodingsOption = "all",
    max_len: Annotated[int, typer.Option("--max-len", help="N: slots measured, length built for (4-1024).")] = 256,
    d_model: Annotated[int, typer.Option("--d-model", help="Width of codes and token vectors.")] = 64,
    n_heads: Annotated[int, typer.Option("--n-heads", help="Attention heads; must divide d_model.")] = 4,
    seed: Annotated[int, typer.Option(help="Seed of encoding tables, content and weights.")] = 0,
    out: Annotated[
        Path | None,
        typer.Option(
            help="Results root; files go to OUT/properties/. Default: results/properties-<hash of the settings>/, "
            "never the committed results/properties/.",
            show_default=False,
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No table.")] = False,
    force: ForceOption = False,
) -> None:
    """Measure six properties of each encoding; print pass/fail with the figure behind each; write properties.csv.

    Code c_i of slot i: what the hooks do at slot i, same content everywhere (offset, rotated q and k, bias to slot 0).

    N = --max-len. Encodings with a max_len parameter are built with max_len = N.

    [b]unique[/b]: min ||c_i - c_j|| over slots i != j < N; pass when > 1e-9 * max ||c_i||.

    [b]bounded[/b]: max ||c_i|| over slots < N; pass when <= 1.1 * the max over slots < N/2.

    [b]deterministic[/b]: max |c_i - c'_i| between two freshly built encodings; pass when 0.

    [b]generalises[/b]: max ||c_i(2N) - c_i(N)|| / max ||c_i(N)||, slots < N; pass when <= 1e-9; an error is a fail.

    [b]smooth[/b]: mean ||c_i+1 - c_i|| / mean ||c_i - c_j|| over |i - j| >= N/2; pass when < 0.5.

    [b]relative-aware[/b]: max change of the scores among 8 tokens all moved s slots on / max |score|; pass <= 1e-9.

    Definitions and reasoning: docs/properties.md.
    """
    started = time.perf_counter()
    from orderlab.commands import compare as comparing
    from orderlab.commands.properties import measure_and_write
    from orderlab.measure.properties import PROPERTIES
    from orderlab.report import terminal as report

    names = comparing.parse_encodings(encodings)
    phases = report.Phases(quiet, started)
    measuring = phases.phase("measuring", f"measuring the properties of {len(names)} encoding(s) at N={max_len}")
    with measuring:
        frame, folder = measure_and_write(names, max_len, d_model, n_heads, seed, out, force)
    if not quiet:
        console = report.Console()
        title = f"properties at N={max_len}, d_model={d_model}, {n_heads} heads (float64)"
        console.print(report.properties_table(frame, PROPERTIES, title))
        console.print(f"wrote {folder}/properties.csv ({len(frame):,} rows), manifest.json {phases.took()}")


@app.command()
@user_errors
def trace(
    spec: SpecArgument,
    input_index: Annotated[int, typer.Option("--input", help="Which entry of the spec's inputs (0-based).")] = 0,
    layer: Annotated[int, typer.Option(help="Which attention layer (1-based).")] = 1,
    encoding: Annotated[str, typer.Option(help="Which of the spec's encodings; the first if empty.")] = "",
    decimals: Annotated[int, typer.Option(min=0, max=12, help="Decimals shown in the tables.")] = 4,
    out: Annotated[Path, typer.Option(help="Results root; the CSV goes to OUT/<spec name>_trace/.")] = Path("results"),
    force: ForceOption = False,
    family: Annotated[
        str,
        typer.Option(
            help="Which model family of a zoo spec that sweeps family: (gpt2, llama, ...); the first if empty."
        ),
    ] = "",
) -> None:
    """Print one layer's attention step by step (x, Q, K, V, scores, weights, output) and write it as CSV.

    A model of the zoo shows the hook points its family exposes (`orderlab models`), on its token slots."""
    started = time.perf_counter()
    from orderlab.commands.trace import trace_and_write
    from orderlab.report import terminal as report

    phases = report.Phases(False, started)
    with phases.phase("tracing", f"tracing layer {layer} of {spec}"):
        outcome = trace_and_write(spec, input_index, layer, encoding, out, force, family)
    console = report.Console()
    if outcome.note:
        console.print(outcome.note)
    for table in report.trace_tables(outcome.trace, decimals):
        console.print(table)
    console.print(f"wrote {outcome.path} {phases.took()}")


@app.command()
@user_errors
def plot(
    results_dir: Annotated[Path, typer.Argument(help="A folder written by `orderlab run`.", show_default=False)],
    file_format: Annotated[
        str,
        typer.Option(
            "--format",
            help="png for screens; svg or pdf (vector) for papers; several joined by commas (png,pdf). Figures "
            "of the formats not asked for stay.",
        ),
    ] = "png",
) -> None:
    """Draw the figures of a results folder into RESULTS_DIR/figures/: metric vs layer, every attention head, probe
    accuracy."""
    started = time.perf_counter()
    from orderlab.report import terminal as report
    from orderlab.report.figures import parse_formats, plot_results

    phases = report.Phases(False, started)
    formats = parse_formats(file_format)
    with phases.phase("figures", f"drawing the figures of {results_dir}"):
        paths = plot_results(results_dir, formats)
    for path in paths:
        typer.echo(f"wrote {path}")
    typer.echo(f"{len(paths)} figure file(s) {phases.took()}")


@app.command("report")
@user_errors
def write_html_report(
    results_dirs: Annotated[
        list[Path], typer.Argument(help="Folders written by orderlab (run, compare, properties).", show_default=False)
    ],
    out: Annotated[
        Path | None,
        typer.Option(
            help="The HTML file to write (replaced whole; nothing else is touched). Default: RESULTS_DIR/report.html "
            "for one folder that `orderlab run` wrote; required otherwise.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Write one self-contained HTML file over results folders: summary tables with verdict colours, metric-by-layer
    and probe curves, every attention head, the spec and the manifest. Opens offline; nothing is fetched."""
    started = time.perf_counter()
    from orderlab.report import terminal as report
    from orderlab.report.html import default_report_path, write_report

    out = out or default_report_path(results_dirs)
    phases = report.Phases(False, started)
    with phases.phase("report", f"writing {out} from {len(results_dirs)} folder(s)"):
        written = write_report(results_dirs, out)
    typer.echo(f"wrote {written} {phases.took()}")


@app.command()
@user_errors
def check(
    targets: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Spec files or folders of specs; default: every spec in experiments/. A spec without a "
            "baseline folder fails (exit 1) until `orderlab check --update` makes one.",
            metavar="SPEC_OR_DIR...",
            show_default=False,
        ),
    ] = None,
    rtol: Annotated[
        float | None, typer.Option(help="Relative tolerance (finite, >= 0); default from the spec's check: or dtype.")
    ] = None,
    atol: Annotated[
        float | None, typer.Option(help="Absolute tolerance (finite, >= 0); default from the spec's check: or dtype.")
    ] = None,
    update: Annotated[bool, typer.Option("--update", help="Rewrite baselines atomically; say what changed.")] = False,
    junit: Annotated[Path | None, typer.Option(help="Also write a JUnit XML report, one test case per spec.")] = None,
    html: Annotated[
        Path | None, typer.Option(help="Also write an HTML drift report: drifted rows, baseline vs new (one file).")
    ] = None,
    out: Annotated[
        Path, typer.Option("--out", "--results", help="Baseline root: OUT/<spec name>/*.csv (--results: the old name).")
    ] = Path("results"),
    device: Annotated[
        Device,
        typer.Option(
            help="Where to re-run: cpu, cuda, or auto. A GPU run is held to the CPU baselines within the "
            "same tolerances (GPU CI: docs/checks.md)."
        ),
    ] = Device.cpu,
) -> None:
    """Re-run specs and compare every CSV with the committed results.

    Exit 0 clean; 1 drift (a value, row or CSV differs) or a spec without a baseline; 2 on a spec or baseline error.
    """
    started = time.perf_counter()
    from orderlab.commands.check import run_check
    from orderlab.report import terminal as report

    phases = report.Phases(False, started)
    raise typer.Exit(run_check(targets or [], out, rtol, atol, update, junit, html, phases, device.torch()))


def main() -> None:
    from orderlab.report.streams import safe_output_streams

    safe_output_streams()
    app()
