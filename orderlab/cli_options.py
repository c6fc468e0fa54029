"""The command line's arguments and options, declared once each: name, help, checks (typer reads them).

cli.py's commands name their parameters with these types, so that a command reads as its signature and an option
shared by several commands (--out, --force, --device, -e) says the same thing everywhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from orderlab.core.device_choices import DeviceChoice as DeviceChoice  # cli.py's defaults name it here


def _flag(name: str, text: str, *short: str) -> Any:
    return typer.Option(name, *short, help=text)


def _print_version(asked: bool) -> None:
    if asked:
        from orderlab import __version__

        typer.echo(f"orderlab {__version__}")
        raise typer.Exit()


Version = Annotated[
    bool, typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit.")
]
DASK = "(needs the \\[dist] extra)"
RESULTS = Path("results")

# arguments
Spec = Annotated[Path, typer.Argument(help="Experiment spec (YAML).", metavar="SPEC", show_default=False)]
Specs = Annotated[list[Path], typer.Argument(help="Spec files to check.", metavar="SPEC", show_default=False)]
CompareSpecs = Annotated[
    list[Path] | None,
    typer.Argument(help="Specs to run; default: every experiments/*.yaml.", metavar="SPEC", show_default=False),
]
Shards = Annotated[
    list[Path],
    typer.Argument(help="The N shard folders of one run (any order).", metavar="SHARD_DIR", show_default=False),
]
ResultsDir = Annotated[Path, typer.Argument(help="A folder written by `orderlab run`.", show_default=False)]
ResultsDirs = Annotated[
    list[Path], typer.Argument(help="Folders written by orderlab (run, compare, properties).", show_default=False)
]
CheckTargets = Annotated[
    list[Path] | None,
    typer.Argument(
        metavar="SPEC_OR_DIR",
        show_default=False,
        help="Spec files or folders of specs; default: every spec in experiments/. A spec without a baseline folder "
        "fails (exit 1) until `orderlab check --update` makes one.",
    ),
]

# options shared by commands
Out = Annotated[Path, typer.Option(help="Results root; files go to OUT/<name>/ (the spec's, or the command's).")]
DeviceOption = Annotated[
    DeviceChoice,
    typer.Option(help="Where to compute: cpu, cuda, or auto (a CUDA GPU where there is one, else the CPU)."),
]
Quiet = Annotated[bool, _flag("--quiet", "No progress bar and no table.", "-q")]
Force = Annotated[
    bool, _flag("--force", "Also replace a folder that another orderlab command or spec wrote (never a user's files).")
]
Encodings = Annotated[
    str,
    typer.Option(
        "--encodings",
        "-e",
        help="Comma-separated encodings, e.g. sinusoidal,rope; 'all' = every built-in; a user's own as "
        "package.module:Class.",
    ),
]

# run
Plot = Annotated[bool, _flag("--plot", "Also draw the figures into OUT/<spec name>/figures/.")]
Html = Annotated[bool, _flag("--html", "Also write OUT/<spec name>/report.html: tables, figures, spec, manifest.")]
ChunkSize = Annotated[
    int | None,
    typer.Option(min=1, help="Permutations per forward pass; chosen from d_model, length and memory if omitted."),
]
Shard = Annotated[
    str | None,
    typer.Option(
        metavar="K/N",
        show_default=False,
        help="Run only shard K of N (a fixed partition of the work) into OUT/<spec name>.shard-K-of-N/; "
        "`orderlab merge` joins the N shards.",
    ),
]
Workers = Annotated[
    int | None,
    typer.Option(
        min=1, show_default=False, help=f"Run shards on a local Dask cluster of this many processes, then merge {DASK}."
    ),
]
Scheduler = Annotated[
    str | None,
    typer.Option(
        metavar="ADDRESS",
        show_default=False,
        help=f"Run shards on an existing Dask cluster (tcp://host:8786), one per worker, then merge here {DASK}.",
    ),
]

# validate, compare, properties
PlanDevice = Annotated[
    DeviceChoice,
    typer.Option(
        help="With --plan: the device to price, cpu, cuda or auto (its matmul rate in the spec's dtype is measured "
        "once, about a second, and cached)."
    ),
]
PROPERTIES_HELP = """\
Measure six properties of each encoding; print pass/fail with the figure behind each; write properties.csv.

Code c_i of slot i: what the hooks do at slot i, same content everywhere (offset, rotated q and k, bias to slot 0).
N = --max-len; encodings with a max_len parameter are built with max_len = N.

[b]unique[/b]: min ||c_i - c_j|| over slots i != j < N; pass when > 1e-9 * max ||c_i||.

[b]bounded[/b]: max ||c_i|| over slots < N; pass when <= 1.1 * the max over slots < N/2.

[b]deterministic[/b]: max |c_i - c'_i| between two freshly built encodings; pass when 0.

[b]generalises[/b]: max ||c_i(2N) - c_i(N)|| / max ||c_i(N)||, slots < N; pass when <= 1e-9; an error is a fail.

[b]smooth[/b]: mean ||c_i+1 - c_i|| / mean ||c_i - c_j|| over |i - j| >= N/2; pass when < 0.5.

[b]relative-aware[/b]: max change of the scores among 8 tokens all moved s slots on / max |score|; pass <= 1e-9.

Definitions and reasoning: docs/properties.md.
"""
Plan = Annotated[bool, _flag("--plan", "Also print what each run will cost: memory, sequences, time, CSV sizes.")]
Metric = Annotated[
    list[str] | None,
    typer.Option(
        "--metric",
        "-m",
        show_default=False,
        help="Rows to show, repeatable: a metric (equivariance, invariance_mean, attention_equivariance, token_shift, "
        "pair_cosine, pair_l2, ...) or a spec family (invariance, attention, pair_distance). Default: all.",
    ),
]
HtmlFile = Annotated[Path | None, typer.Option(help="Also write this self-contained HTML report (one file, offline).")]
MaxLen = Annotated[int, typer.Option("--max-len", help="N: slots measured, length built for (4-1024).")]
DModel = Annotated[int, typer.Option("--d-model", help="Width of codes and token vectors.")]
NHeads = Annotated[int, typer.Option("--n-heads", help="Attention heads; must divide d_model.")]
Seed = Annotated[int, typer.Option(help="Seed of encoding tables, content and weights.")]
PropertiesOut = Annotated[
    Path | None,
    typer.Option(
        help="Results root; files go to OUT/properties/. Default: results/properties-<hash of the settings>/, never "
        "the committed results/properties/.",
        show_default=False,
    ),
]
QuietTable = Annotated[bool, _flag("--quiet", "No table.", "-q")]

# trace, plot, report
Input = Annotated[
    int,
    typer.Option(
        "--input", help="Which entry of the spec's inputs (0-based); of a corpus spec, which of its sentences."
    ),
]
Layer = Annotated[int, typer.Option(help="Which attention layer (1-based).")]
Encoding = Annotated[str, typer.Option(help="Which of the spec's encodings; the first if empty.")]
Decimals = Annotated[int, typer.Option(min=0, max=12, help="Decimals shown in the tables.")]
Formats = Annotated[
    str,
    typer.Option(
        "--format",
        help="png for screens; svg or pdf (vector) for papers; several joined by commas (png,pdf). Figures of the "
        "formats not asked for stay.",
    ),
]
ReportFile = Annotated[
    Path | None,
    typer.Option(
        help="The HTML file to write (replaced whole; nothing else is touched). Default: RESULTS_DIR/report.html for "
        "one folder that `orderlab run` wrote; required otherwise.",
        show_default=False,
    ),
]
Family = Annotated[
    str,
    typer.Option(help="Which model family of a zoo spec that sweeps family: (gpt2, llama, ...); the first if empty."),
]
HookFamily = Annotated[
    str, typer.Argument(metavar="FAMILY", help="A model family (orderlab models: gpt2, llama, ...), or stack.")
]

# check
Rtol = Annotated[float | None, typer.Option(help="Relative tolerance (finite, >= 0); default: the spec's or dtype's.")]
Atol = Annotated[float | None, typer.Option(help="Absolute tolerance (finite, >= 0); default: the spec's or dtype's.")]
Update = Annotated[bool, _flag("--update", "Rewrite baselines atomically; say what changed.")]
Junit = Annotated[Path | None, typer.Option(help="Also write a JUnit XML report, one test case per spec.")]
DriftHtml = Annotated[
    Path | None, typer.Option(help="Also write an HTML drift report: drifted rows, baseline vs new (one file).")
]
CheckDevice = Annotated[
    DeviceChoice,
    typer.Option(
        help="Where to re-run: cpu, cuda, or auto. A GPU run is held to the CPU baselines within the same tolerances "
        "(GPU CI: docs/checks.md)."
    ),
]
Baselines = Annotated[
    Path, typer.Option("--out", "--results", help="Baseline root: OUT/<spec name>/*.csv (--results: the old name).")
]
