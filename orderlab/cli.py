"""The `orderlab` command: parse arguments, call one function per command, render, map errors to exit codes.

Holds no science. Heavy imports (torch, pandas) happen inside the commands that compute, so
`orderlab --help` and `orderlab validate` answer without loading them.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from orderlab.errors import OrderlabError

app = typer.Typer(
    help="Measure how much an attention stack knows about word order, and where it loses it.",
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
)


class Device(StrEnum):
    cpu = "cpu"
    cuda = "cuda"


def user_errors(command: Callable[..., Any]) -> Callable[..., Any]:
    """Turn OrderlabError into one line on stderr and exit code 2; Ctrl-C into exit code 130."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except OrderlabError as error:
            typer.echo(f"error: {error}", err=True)
            raise typer.Exit(error.exit_code) from None
        except KeyboardInterrupt:
            typer.echo("interrupted: no results were written", err=True)
            raise typer.Exit(130) from None

    return wrapper


SpecArgument = Annotated[Path, typer.Argument(help="Experiment spec (YAML).", show_default=False)]


@app.command()
@user_errors
def run(
    spec: SpecArgument,
    out: Annotated[Path, typer.Option(help="Results root; files go to OUT/<spec name>/.")] = Path("results"),
    device: Annotated[Device, typer.Option(help="Where to compute.")] = Device.cpu,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar and no table.")] = False,
    plot: Annotated[bool, typer.Option("--plot", help="Also draw the figures into OUT/<spec name>/figures/.")] = False,
) -> None:
    """Run a spec: print the summary table and write metrics.csv, summary.csv and manifest.json."""
    from orderlab.experiment import run_and_write

    outcome = run_and_write(spec, out, device.value, quiet=quiet)
    if plot:
        from orderlab.plots import plot_results

        figures = plot_results(outcome.folder)
        if not quiet:
            typer.echo(f"wrote {len(figures)} figure(s) to {outcome.folder}/figures/")
    if not quiet:
        from orderlab import report

        console = report.Console()
        console.print(outcome.table)
        if outcome.decodability is not None:
            console.print(outcome.decodability)
        console.print(f"wrote {outcome.folder}/metrics.csv ({outcome.rows:,} rows), summary.csv, manifest.json")


@app.command()
@user_errors
def validate(specs: Annotated[list[Path], typer.Argument(help="Spec files to check.", show_default=False)]) -> None:
    """Check specs without running them; one line per problem, exit 2 if any."""
    from orderlab.spec import load_spec

    failed = False
    for path in specs:
        try:
            loaded = load_spec(path)
        except OrderlabError as error:
            typer.echo(f"error: {error}", err=True)
            failed = True
        else:
            typer.echo(f"{path}: ok ({loaded.spec.name})")
    if failed:
        raise typer.Exit(2)


@app.command()
def schema() -> None:
    """Print the JSON Schema of a spec, for editor completion and validation."""
    from orderlab.spec import Spec

    typer.echo(json.dumps(Spec.model_json_schema(), indent=2))


def main() -> None:
    app()


@app.command()
@user_errors
def trace(
    spec: SpecArgument,
    input_index: Annotated[int, typer.Option("--input", help="Which entry of the spec's inputs (0-based).")] = 0,
    layer: Annotated[int, typer.Option(help="Which attention layer (1-based).")] = 1,
    encoding: Annotated[str, typer.Option(help="Which of the spec's encodings; the first if empty.")] = "",
    decimals: Annotated[int, typer.Option(min=0, max=12, help="Decimals shown in the tables.")] = 4,
    out: Annotated[Path, typer.Option(help="Results root; the CSV goes to OUT/<spec name>_trace/.")] = Path("results"),
) -> None:
    """Print one layer's attention step by step (x, Q, K, V, scores, weights, output) and write it as CSV."""
    from orderlab.trace import trace_and_write

    outcome = trace_and_write(spec, input_index, layer, encoding, out)
    from orderlab import report

    console = report.Console()
    if outcome.note:
        console.print(outcome.note)
    for table in report.trace_tables(outcome.trace, decimals):
        console.print(table)
    console.print(f"wrote {outcome.path}")


@app.command()
@user_errors
def plot(
    results_dir: Annotated[Path, typer.Argument(help="A folder written by `orderlab run`.", show_default=False)],
) -> None:
    """Draw the figures of a results folder (metric vs layer, attention heatmaps, probe accuracy) as PNGs."""
    from orderlab.plots import plot_results

    for path in plot_results(results_dir):
        typer.echo(f"wrote {path}")
