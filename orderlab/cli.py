"""The `orderlab` command: parse arguments, call the command's function in commands/, hand its result to report/,
map errors to exit codes.

No science, no orchestration (orderlab.api calls the same functions); heavy imports happen inside the commands.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from orderlab import cli_options as o
from orderlab.report.command_line import Group, echo_error, user_errors

if TYPE_CHECKING:
    from orderlab.measure.run_options import RunOptions
    from orderlab.report.terminal import PhaseBars
    from orderlab.results.outcome import Outcome

app = typer.Typer(
    cls=Group,
    help="Measure how much an attention stack knows about word order, and where it loses it.",
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
)


@app.callback()
def _options(version: o.Version = False) -> None:
    """Measure how much an attention stack knows about word order, and where it loses it."""


def run_options(device: o.DeviceChoice, chunk_size: int | None = None, force: bool = False) -> RunOptions:
    """A run's options from its command line: the device is checked here, once, before any work starts."""
    from orderlab.measure.run_options import RunOptions  # lazy: --help and validate never compute
    from orderlab.models.devices import resolve_device

    return RunOptions(resolve_device(device.value), chunk_size, force)


def phases(quiet: bool = False) -> PhaseBars:
    """The command's clock, started now (before its imports), and its phases drawn on the terminal."""
    started = time.perf_counter()
    from orderlab.report.terminal import PhaseBars

    return PhaseBars(quiet, started)


# `orderlab run` exit code when some values came out NaN or inf: written, shown in red, never a verdict.
NON_FINITE_EXIT = 1


@app.command()
@user_errors
def run(
    spec: o.Spec,
    out: o.Out = o.RESULTS,
    device: o.DeviceOption = o.DeviceChoice.cpu,
    quiet: o.Quiet = False,
    plot: o.Plot = False,
    html: o.Html = False,
    chunk_size: o.ChunkSize = None,
    force: o.Force = False,
    shard: o.Shard = None,
    workers: o.Workers = None,
    scheduler: o.Scheduler = None,
) -> None:
    """Run a spec: print the summary table and write metrics.csv, summary.csv (and more) and manifest.json.

    Exit 0 when every value is finite, 1 when some came out NaN or inf (written as nan, verdict non-finite), 2 on
    bad input.
    """
    shown = phases(quiet)
    from orderlab.commands.run import run as run_spec
    from orderlab.report import command_output as output

    options = run_options(device, chunk_size, force)
    done = run_spec(spec, out, options, shard=shard, workers=workers, scheduler=scheduler, plot=plot, html=html,
                    phases=shown)  # fmt: skip
    if done.outcome is None:
        assert done.shard is not None
        return None if quiet else output.shard_line(done.shard, shown)
    show_outcome(done.outcome, shown, done.figures if plot else None, done.report)


def show_outcome(outcome: Outcome, shown: PhaseBars, figures: list[Path] | None = None,
                 html: Path | None = None) -> None:  # fmt: skip
    """The summary tables and files written, with the command's wall time; exit 1 if some values are NaN or inf."""
    from orderlab.report.command_output import run_lines

    run_lines(outcome, shown, figures, html)
    if outcome.non_finite:
        raise typer.Exit(NON_FINITE_EXIT)


@app.command()
@user_errors
def merge(shards: o.Shards, out: o.Out = o.RESULTS, quiet: o.QuietTable = False, force: o.Force = False) -> None:
    """Join the shards of `run --shard K/N` into the folder the whole run writes (byte for byte, on one set-up).

    Missing, repeated or mismatched shards (another spec, another N) are refused before anything is written.
    """
    shown = phases(quiet)
    from orderlab.commands.merge import merge as merge_shards

    show_outcome(merge_shards(shards, out, force, phases=shown), shown)


@app.command()
def validate(specs: o.Specs, plan: o.Plan = False, device: o.PlanDevice = o.DeviceChoice.cpu) -> None:
    """Check specs without running them; one line per problem, exit 2 if any.

    A spec whose run would not fit this machine (memory, a month of compute, CSVs over 2 GB) is a problem too.
    """
    from orderlab.commands.validate import validate as validate_specs
    from orderlab.report.plan_table import validated_lines

    found = validate_specs(specs, plan, device.value)
    for each in found:
        if each.spec is None:
            echo_error(each.error or "")
        else:
            typer.echo("\n".join(validated_lines(each.path, each.spec.name, each.plan)))
    if any(each.spec is None for each in found):
        raise typer.Exit(2)


@app.command()
def schema() -> None:
    """Print the JSON Schema of a spec, for editor completion and validation."""
    from orderlab.spec.schema import Spec

    typer.echo(json.dumps(Spec.model_json_schema(), indent=2))


@app.command("encodings")
@user_errors
def list_encodings() -> None:
    """List every built-in positional encoding: kind, absolute or relative, parameters with defaults, reference."""
    from orderlab.commands.catalog import encodings
    from orderlab.report.command_output import encodings_lines

    encodings_lines(encodings())


@app.command("models")
@user_errors
def list_models() -> None:
    """List the model zoo's families: positions, encoder or causal LM, position ablations, real weights found locally
    (the packaged MiniLM, the Hugging Face cache). Loads and downloads nothing."""
    from orderlab.commands.catalog import models
    from orderlab.report.command_output import models_lines

    models_lines(models())


@app.command("hooks")
@user_errors
def list_hooks(family: o.HookFamily) -> None:
    """List a family's hook points (`stack`: the attention stack's): shapes, writable, TransformerLens/nnsight names."""
    from orderlab.commands.hooks import hook_points
    from orderlab.report.command_output import hooks_lines

    hooks_lines(hook_points(family))


@app.command()
@user_errors
def compare(
    specs: o.CompareSpecs = None,
    encodings: o.Encodings = "all",
    metric: o.Metric = None,
    out: o.Out = o.RESULTS,
    device: o.DeviceOption = o.DeviceChoice.cpu,
    quiet: o.Quiet = False,
    force: o.Force = False,
    html: o.HtmlFile = None,
) -> None:
    """Run specs once per encoding and print one side-by-side table; write it to OUT/compare/compare.csv.

    Rows: spec input x metric x layer; columns: encodings; a cell is the worst value over
    permutations and heads, with its verdict (green ✓ within round-off, red ✗ order-sensitive).
    """
    shown = phases(quiet)
    from orderlab.commands.compare import compare_specs
    from orderlab.report.command_output import comparison_lines

    done = compare_specs(specs, encodings, metric, out, run_options(device, force=force), html=html, phases=shown)
    if not quiet:
        found, skipped = done.comparison, [(left_out.path, left_out.why) for left_out in done.skipped]
        comparison_lines(found.table, found.encodings, found.dtypes, done.folder, skipped, shown, bool(metric))


@app.command(help=o.PROPERTIES_HELP)
@user_errors
def properties(encodings: o.Encodings = "all", max_len: o.MaxLen = 256, d_model: o.DModel = 64, n_heads: o.NHeads = 4,
               seed: o.Seed = 0, out: o.PropertiesOut = None, quiet: o.QuietTable = False,
               force: o.Force = False) -> None:  # fmt: skip
    shown = phases(quiet)
    from orderlab.commands.properties import properties as measure
    from orderlab.report.command_output import properties_lines

    done = measure(encodings, max_len, d_model, n_heads, seed, out, force, phases=shown)
    if not quiet:
        properties_lines(done.table, done.title, done.folder, shown)


@app.command()
@user_errors
def trace(
    spec: o.Spec,
    input_index: o.Input = 0,
    layer: o.Layer = 1,
    encoding: o.Encoding = "",
    decimals: o.Decimals = 4,
    out: o.Out = o.RESULTS,
    force: o.Force = False,
    family: o.Family = "",
) -> None:
    """Print one layer's attention step by step (x, Q, K, V, scores, weights, output); write it as a CSV into
    OUT/<spec name>_trace/.

    A model of the zoo shows the hook points its family exposes (`orderlab models`), on its token slots."""
    shown = phases()
    from orderlab.commands.trace import trace_and_write
    from orderlab.report.command_output import trace_lines

    done = trace_and_write(spec, input_index, layer, encoding, out, force, family, phases=shown)
    trace_lines(done.trace, done.path, done.note, decimals, shown)


@app.command()
@user_errors
def plot(results_dir: o.ResultsDir, file_format: o.Formats = "png") -> None:
    """Draw the figures of a results folder into RESULTS_DIR/figures/: metric vs layer, every attention head, probe
    accuracy."""
    shown = phases()
    from orderlab.commands.plot import plot as draw

    paths = draw(results_dir, file_format, phases=shown).paths
    typer.echo("".join(f"wrote {path}\n" for path in paths) + f"{len(paths)} figure file(s) {shown.took()}")


@app.command("report")
@user_errors
def write_html_report(results_dirs: o.ResultsDirs, out: o.ReportFile = None) -> None:
    """Write one self-contained HTML file over results folders: summary tables with verdict colours, metric-by-layer
    and probe curves, every attention head, the spec and the manifest. Opens offline; nothing is fetched."""
    shown = phases()
    from orderlab.commands.report import report

    typer.echo(f"wrote {report(results_dirs, out, phases=shown)} {shown.took()}")


@app.command()
@user_errors
def check(
    targets: o.CheckTargets = None,
    rtol: o.Rtol = None,
    atol: o.Atol = None,
    update: o.Update = False,
    junit: o.Junit = None,
    html: o.DriftHtml = None,
    out: o.Baselines = o.RESULTS,
    device: o.CheckDevice = o.DeviceChoice.cpu,
) -> None:
    """Re-run specs and compare every CSV with the committed results.

    Exit 0 clean; 1 drift (a value, row or CSV differs) or a spec without a baseline; 2 on a spec or baseline error.
    """
    shown = phases()
    from orderlab.commands.check import check as check_specs
    from orderlab.report import command_output as output

    done = check_specs(targets or [], out, rtol, atol, update, junit, html, options=run_options(device), phases=shown,
                       on_spec=output.spec_check_lines)  # fmt: skip
    output.checked_line(len(done.outcomes), shown)
    raise typer.Exit(done.exit_code)


def main() -> None:
    from orderlab.report.command_line import run_as_process

    run_as_process(app)
