"""The glue of `orderlab check`: plan, check each spec, render what was found, write JUnit, pick the exit code.

Kept out of cli.py so the command stays a few lines; the comparison itself lives in check.py and
every table and line on the terminal comes from report.py.
"""

from __future__ import annotations

from pathlib import Path

from orderlab import report
from orderlab.check import SpecCheck, check_spec, plan
from orderlab.junit import Case, write_junit

EXPERIMENTS = Path("experiments")
CLEAN, DRIFT, ERROR = 0, 1, 2


def run_check(
    targets: list[Path], results: Path, rtol: float | None, atol: float | None, update: bool, junit: Path | None
) -> int:
    """Check (or update) every planned spec; return 0 clean, 1 drift, 2 if any spec could not be checked."""
    chosen = plan(targets, EXPERIMENTS, results, update)
    console, errors = report.log_console(), report.stderr_console()
    for note in chosen.skipped:
        errors.print(f"note: {note}", markup=False, highlight=False, soft_wrap=True)
    outcomes: list[SpecCheck] = []
    for path in chosen.specs:
        with report.progress_bar(f"checking {path}", quiet=False) as advance:
            outcome = check_spec(path, results, rtol, atol, update, advance)
        outcomes.append(outcome)
        for warning in outcome.warnings:
            errors.print(f"warning: {warning}", markup=False, highlight=False, soft_wrap=True)
        if outcome.comparison is not None and outcome.comparison.drifted:
            console.print(drift_table(outcome))
        if outcome.status == "error":
            errors.print(f"error: {outcome.summary}", markup=False, highlight=False, soft_wrap=True)
        else:
            console.print(report.check_line(outcome), highlight=False, soft_wrap=True)
    if junit is not None:
        write_junit(junit, [junit_case(o) for o in outcomes])
    if any(o.status == "error" for o in outcomes):
        return ERROR
    return DRIFT if any(o.status == "drift" for o in outcomes) else CLEAN


def drift_table(outcome: SpecCheck):
    what = "changed rows" if outcome.status == "updated" else "drifted rows"
    return report.drift_table(outcome.comparison, f"{outcome.name}: {what} ({outcome.path})")


def junit_case(outcome: SpecCheck) -> Case:
    details = report.plain_text(drift_table(outcome)) if outcome.status == "drift" else ""
    return Case(
        name=outcome.name,
        file=str(outcome.path),
        seconds=outcome.seconds,
        failure=outcome.summary if outcome.status == "drift" else None,
        error=outcome.summary if outcome.status == "error" else None,
        details=details,
    )
