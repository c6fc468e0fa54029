"""What each command prints, drawn from the data its function in commands/ returned (the CLI hands it over here)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from orderlab.report import catalog_tables
from orderlab.report import terminal as report
from orderlab.report.trace_view import trace_tables
from orderlab.results.outcome import Outcome, ShardOutcome

if TYPE_CHECKING:
    from orderlab.encodings.entries import EncodingEntry
    from orderlab.measure.hook_listing import HookListing
    from orderlab.measure.trace import LayerTrace
    from orderlab.models.hf.zoo import ModelCatalog
    from orderlab.results.baseline_diff import SpecCheck

COMPARE_ROWS_SHORT = 60  # a comparison table longer than this ends with a hint to choose rows with --metric


def run_lines(
    outcome: Outcome, phases: report.PhaseBars, figures: list[Path] | None = None, html: Path | None = None
) -> None:
    """A run's figures and report written (when asked for), its summary tables and files, with the command's wall
    time; the NaN/inf line if any."""
    if not phases.quiet:
        console = report.Console()
        if figures is not None:
            plain_line(console, f"wrote {len(figures)} figure(s) to {outcome.folder}/figures/")
        if html is not None:
            plain_line(console, f"wrote {html}")
        for table in report.run_tables(outcome.view, console.width):
            console.print(table)
        first, *others = outcome.files
        console.print(f"wrote {outcome.folder}/{first} ({outcome.rows:,} rows), {', '.join(others)} {phases.took()}")
        if outcome.kept:
            plain_line(console, f"kept the bytes already there of {', '.join(outcome.kept)}: every value within "
                       "check's tolerances of this run's, same spec and library versions (another CPU's last digits "
                       "never rewrite a baseline); delete the folder to write this machine's")  # fmt: skip
    if outcome.non_finite:
        report.non_finite_line(outcome.non_finite, outcome.folder)


def plain_line(console: report.Console, text: str) -> None:
    """A line as it is (paths hold brackets), on one line at any width."""
    console.print(text, markup=False, highlight=False, soft_wrap=True)


def shard_line(shard: ShardOutcome, phases: report.PhaseBars) -> None:
    index, count = shard.shard
    report.Console().print(
        f"wrote shard {index} of {count} ({len(shard.units)} unit(s), {shard.rows:,} rows) to {shard.folder} "
        f"{phases.took()}; join the shards with `orderlab merge`", markup=False, highlight=False, soft_wrap=True
    )  # fmt: skip


def comparison_lines(
    table: pd.DataFrame,
    encodings: list[str],
    dtypes: list[str],
    folder: Path,
    skipped: list[tuple[Path, str]],
    phases: report.PhaseBars,
    rows_chosen: bool,
) -> None:
    """The specs compare left out (on stderr), the side-by-side table, the file written, and a hint when long."""
    errors, console = report.stderr_console(), report.Console()
    for path, why in skipped:
        errors.print(f"skipped {path}: {why}, so compare cannot swap its encodings", markup=False, highlight=False)
    for drawn in report.comparison_tables(table, encodings, "compare: " + ", ".join(encodings), dtypes, console.width):
        console.print(drawn)
    console.print(f"wrote {folder}/compare.csv ({len(table):,} rows), manifest.json {phases.took()}")
    if not rows_chosen and len(table) > COMPARE_ROWS_SHORT:
        console.print(f"{len(table):,} rows: choose some with --metric (-m equivariance -m pair_distance, ...), or "
                      "read compare.csv", markup=False, highlight=False)  # fmt: skip


def encodings_lines(entries: list[EncodingEntry]) -> None:
    console = report.Console()
    console.print(catalog_tables.encodings_table(entries, console.width))


def models_lines(found: ModelCatalog) -> None:
    report.Console().print(catalog_tables.models_table(found.entries, found.broken))


def hooks_lines(listing: HookListing) -> None:
    report.Console().print(catalog_tables.hooks_table(listing))


def properties_lines(table: pd.DataFrame, title: str, folder: Path, phases: report.PhaseBars) -> None:
    from orderlab.measure.properties import PROPERTIES  # lazy: it imports torch

    console = report.Console()
    for drawn in catalog_tables.properties_tables(table, PROPERTIES, title, console.width):
        console.print(drawn)
    console.print(f"wrote {folder}/properties.csv ({len(table):,} rows), manifest.json {phases.took()}")


def trace_lines(trace: LayerTrace, path: Path, note: str, decimals: int, phases: report.PhaseBars) -> None:
    console = report.Console()
    if note:
        console.print(note)
    for table in trace_tables(trace, console.width, decimals):
        console.print(table)
    console.print(f"wrote {path} {phases.took()}")


def spec_check_lines(outcome: SpecCheck) -> None:
    """What `check` found for one spec, as it is found: warnings and errors on stderr, drift tables and the spec's
    line on stdout."""
    console, errors = report.log_console(), report.stderr_console()
    for warning in outcome.warnings:
        errors.print(f"warning: {warning}", markup=False, highlight=False, soft_wrap=True)
    for comparison in outcome.drifted:
        console.print(report.spec_drift_table(outcome, comparison))
    for unmatched in outcome.unmatched:
        console.print(unmatched.line(), style="red", markup=False, highlight=False, soft_wrap=True)
    if outcome.status == "error":
        errors.print(f"error: {outcome.summary}", markup=False, highlight=False, soft_wrap=True)
    else:
        console.print(report.check_line(outcome), highlight=False, soft_wrap=True)


def checked_line(count: int, phases: report.PhaseBars) -> None:
    report.log_console().print(f"checked {count} spec(s) {phases.took()}", highlight=False)
