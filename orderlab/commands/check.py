"""The glue of `orderlab check`: plan, check each spec, render what was found, write JUnit, pick the exit code.

Kept out of cli.py so the command stays a few lines; the comparison itself lives in check.py and
every table and line on the terminal comes from report/terminal.py.
"""

from __future__ import annotations

from pathlib import Path

from orderlab.errors import OrderlabError
from orderlab.report import html as html_report
from orderlab.report import terminal as report
from orderlab.results.baseline_diff import Comparison, SpecCheck, check_spec, plan, require_tolerance
from orderlab.results.junit import Case, check_destination, write_junit

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
) -> int:
    """Check (or update) every planned spec; return 0 clean, 1 drift or no baseline, 2 if any could not be checked.

    Arguments (tolerances, the JUnit and HTML paths, spec names) are refused before any spec runs.
    """
    require_tolerance("--rtol", rtol)
    require_tolerance("--atol", atol)
    if junit is not None:
        check_destination(junit)
    if html is not None:
        html_report.check_drift_destination(html)
    specs = plan(targets, EXPERIMENTS)
    if not specs:
        write_reports(junit, html, [])
        where = ", ".join(map(str, targets or [EXPERIMENTS]))
        raise OrderlabError(f"nothing to check: no spec files (*.yaml, *.yml) in {where}")
    console, errors = report.log_console(), report.stderr_console()
    outcomes: list[SpecCheck] = []
    for path in specs:
        with report.progress_bar(f"checking {path}", quiet=False) as advance:
            outcome = check_spec(path, results, rtol, atol, update, advance)
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
    write_reports(junit, html, outcomes)
    if any(o.status == "error" for o in outcomes):
        return ERROR
    return DRIFT if any(o.status in FAILED for o in outcomes) else CLEAN


def write_reports(junit: Path | None, html: Path | None, outcomes: list[SpecCheck]) -> None:
    """The JUnit and HTML reports asked for (empty ones when nothing was checked, so CI always finds them)."""
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
