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
    chunk_size: Annotated[
        int | None,
        typer.Option(min=1, help="Permutations per forward pass; chosen from d_model, length and memory if omitted."),
    ] = None,
) -> None:
    """Run a spec: print the summary table and write metrics.csv, summary.csv and manifest.json."""
    from orderlab.experiment import run_and_write

    outcome = run_and_write(spec, out, device.value, quiet=quiet, chunk_size=chunk_size)
    if not quiet:
        from orderlab import report

        console = report.Console()
        console.print(outcome.table)
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
