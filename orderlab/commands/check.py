"""The glue of `orderlab check`: plan, check each spec, render what was found, write JUnit, pick the exit code.

Kept out of cli.py so the command stays a few lines; the comparison itself lives in results/baseline_diff.py and
every table and line on the terminal comes from report/terminal.py.
"""

from __future__ import annotations

from pathlib import Path

import torch

from orderlab.commands.baseline import check_spec, plan
from orderlab.errors import OrderlabError
from orderlab.measure.run_options import RunOptions
from orderlab.models.devices import CPU
from orderlab.report import html as html_report
from orderlab.report import terminal as report
from orderlab.results.baseline_diff import Comparison, SpecCheck, require_tolerance
from orderlab.results.junit import Case, check_destination, write_junit
from orderlab.results.paths import same_file

EXPERIMENTS = Path("experiments")
CLEAN, DRIFT, ERROR = 0, 1, 2
FAILED = ("drift", "missing")  # statuses that fail the check with exit code 1


def run_check(
    targets: list[Path],
    results: Path,
    rtol: float | None,
    atol: float | None,
    update: bool,
    junit: Path | None,
    html: Path | None = None,
    phases: report.Phases | None = None,
    device: torch.device = CPU,
) -> int:
    """Check (or update) every planned spec; return 0 clean, 1 drift or no baseline, 2 if any could not be checked.

    Arguments (tolerances, spec names, the JUnit and HTML paths) are refused before any spec runs; the report
    paths again before they are written, since --update may have made new baseline files meanwhile. phases: the
    command's clock (started before its imports), so that the last line gives its wall time. device: where the
    specs re-run (a GPU run is held to the CPU baselines within the same tolerances).
    """
    phases = phases or report.Phases(quiet=False)
    require_tolerance("--rtol", rtol)
    require_tolerance("--atol", atol)
    specs = plan(targets, EXPERIMENTS)
    check_report_paths(junit, html, read_by_check(specs, results))
    if not specs:
        write_reports(junit, html, [], read_by_check(specs, results))
        where = ", ".join(map(str, targets or [EXPERIMENTS]))
        raise OrderlabError(f"nothing to check: no spec files (*.yaml, *.yml) in {where}")
    console, errors = report.log_console(), report.stderr_console()
    outcomes: list[SpecCheck] = []
    for path in specs:
        with phases.phase("checking", f"checking {path}", unit="seq") as advance:
            options = RunOptions(device, progress=advance, notes=advance.note)
            outcome = check_spec(path, results, rtol, atol, update, options)
        outcomes.append(outcome)
        for warning in outcome.warnings:
            errors.print(f"warning: {warning}", markup=False, highlight=False, soft_wrap=True)
        for comparison in outcome.drifted:
            console.print(drift_table(outcome, comparison))
        for unmatched in outcome.unmatched:
            console.print(unmatched.line(), style="red", markup=False, highlight=False, soft_wrap=True)
        if outcome.status == "error":
            errors.print(f"error: {outcome.summary}", markup=False, highlight=False, soft_wrap=True)
        else:
            console.print(report.check_line(outcome), highlight=False, soft_wrap=True)
    write_reports(junit, html, outcomes, read_by_check(specs, results))
    console.print(f"checked {len(outcomes)} spec(s) {phases.took()}", highlight=False)
    if any(o.status == "error" for o in outcomes):
        return ERROR
    return DRIFT if any(o.status in FAILED for o in outcomes) else CLEAN


def read_by_check(specs: list[Path], results: Path) -> list[Path]:
    """What `check` reads, which its reports must never replace: the spec files and every baseline folder."""
    try:
        baselines = sorted(path for path in results.iterdir() if path.is_dir()) if results.is_dir() else []
    except OSError:
        baselines = []  # an unreadable results root: the check of each spec reports it
    return [*specs, *baselines]


def check_report_paths(junit: Path | None, html: Path | None, inputs: list[Path]) -> None:
    """Refuse report paths that cannot take a report, name one file twice, or name a file the check reads."""
    if junit is not None and html is not None and same_file(junit, html):
        raise OrderlabError(f"--junit {junit} and --html {html} name one file; expected two files")
    if junit is not None:
        check_destination(junit, inputs)
    if html is not None:
        html_report.check_drift_destination(html, inputs)


def write_reports(junit: Path | None, html: Path | None, outcomes: list[SpecCheck], inputs: list[Path]) -> None:
    """The JUnit and HTML reports asked for (empty ones when nothing was checked, so CI always finds them)."""
    check_report_paths(junit, html, inputs)
    if junit is not None:
        write_junit(junit, [junit_case(o) for o in outcomes])
    if html is not None:
        html_report.write_drift_report(html, outcomes)


def drift_table(outcome: SpecCheck, comparison: Comparison) -> report.Table:
    what = "changed rows" if outcome.status == "updated" else "drifted rows"
    return report.drift_table(comparison, f"{outcome.name}: {what} of {comparison.file} ({outcome.path})")


def junit_case(outcome: SpecCheck) -> Case:
    failed = outcome.status in FAILED
    tables = [report.plain_text(drift_table(outcome, c)) for c in outcome.drifted] if failed else []
    return Case(
        name=outcome.name,
        file=str(outcome.path),
        seconds=outcome.seconds,
        failure=outcome.summary if failed else None,
        error=outcome.summary if outcome.status == "error" else None,
        details="".join(tables) + "".join(f"{u.line()}\n" for u in outcome.unmatched),
    )
