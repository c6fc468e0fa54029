"""`orderlab check`: plan the specs, check (or update) each against its baseline, write JUnit and HTML, pick the exit
code; returned as data. What each spec found goes to `on_spec` as it is found, so that a caller can show it at once
(the CLI draws it with report/terminal.py); the comparison itself is commands/baseline.py's."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from html import escape
from pathlib import Path

from orderlab.commands.baseline import check_spec, plan
from orderlab.core.progress import SILENT, Phases
from orderlab.errors import OrderlabError
from orderlab.measure.run_options import DEFAULTS, RunOptions
from orderlab.report import html as html_report
from orderlab.report import terminal as report
from orderlab.results.baseline_diff import SpecCheck, require_tolerance
from orderlab.results.junit import Case, check_destination, write_junit
from orderlab.results.paths import same_file

EXPERIMENTS = Path("experiments")
CLEAN, DRIFT, ERROR = 0, 1, 2
FAILED = ("drift", "missing")  # statuses that fail the check with exit code 1


@dataclass(frozen=True)
class CheckResult:
    """Every spec's check, in the order checked."""

    outcomes: list[SpecCheck]

    def __repr__(self) -> str:
        """One line: the exit code and how many specs ended in each status, never the drift itself."""
        statuses = Counter(outcome.status for outcome in self.outcomes)
        counts = ", ".join(f"{status}: {count}" for status, count in sorted(statuses.items()))
        return f"CheckResult(exit_code={self.exit_code}, specs={len(self.outcomes)} ({counts}))"

    def _repr_html_(self) -> str:
        """A notebook's view: one line per spec, its status and summary."""
        rows = "".join(
            f"<tr><td>{escape(outcome.name)}</td><td>{escape(outcome.status)}</td><td>{escape(outcome.summary)}</td></tr>"
            for outcome in self.outcomes
        )
        head = "<tr><th>spec</th><th>status</th><th>summary</th></tr>"
        return f"<div>{escape(repr(self))}</div><table><thead>{head}</thead><tbody>{rows}</tbody></table>"

    @property
    def exit_code(self) -> int:
        """0 clean, 1 drift or a spec without a baseline, 2 if any spec could not be checked."""
        if any(o.status == "error" for o in self.outcomes):
            return ERROR
        return DRIFT if any(o.status in FAILED for o in self.outcomes) else CLEAN


def check(
    targets: list[Path],
    results: Path,
    rtol: float | None = None,
    atol: float | None = None,
    update: bool = False,
    junit: Path | None = None,
    html: Path | None = None,
    *,
    options: RunOptions = DEFAULTS,
    phases: Phases = SILENT,
    on_spec: Callable[[SpecCheck], None] | None = None,
) -> CheckResult:
    """Check (or update) every planned spec (targets: spec files or folders; none: experiments/).

    Arguments (tolerances, the baseline root, spec names, the JUnit and HTML paths) are refused before any spec
    runs; the report paths again before they are written, since --update may have made new baseline files
    meanwhile. options: each fresh run's (device, chunk size), reporting to its phase."""
    require_tolerance("--rtol", rtol)
    require_tolerance("--atol", atol)
    require_baseline_root(results)
    specs = plan(targets, EXPERIMENTS)
    check_report_paths(junit, html, read_by_check(specs, results))
    if not specs:
        write_reports(junit, html, [], read_by_check(specs, results))
        where = ", ".join(map(str, targets or [EXPERIMENTS]))
        raise OrderlabError(f"nothing to check: no spec files (*.yaml, *.yml) in {where}")
    outcomes: list[SpecCheck] = []
    for path in specs:
        with phases.phase("checking", f"checking {path}", unit="seq") as advance:
            outcome = check_spec(path, results, rtol, atol, update, options.reporting(advance, advance.note))
        outcomes.append(outcome)
        if on_spec is not None:
            on_spec(outcome)
    write_reports(junit, html, outcomes, read_by_check(specs, results))
    return CheckResult(outcomes)


def require_baseline_root(results: Path) -> None:
    """--out names the folder of baselines: absent (each spec is then missing its baseline) or a folder; a file, a
    FIFO, a device or a link that leads nowhere is an argument error, before any spec runs."""
    if (results.exists() or results.is_symlink()) and not results.is_dir():
        raise OrderlabError(f"--out {results}: not a folder; expected the folder of baselines (OUT/<spec name>/)")


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


def junit_case(outcome: SpecCheck) -> Case:
    """One spec as a JUnit test case; a failure carries its drift tables as plain text."""
    failed = outcome.status in FAILED
    tables = [report.plain_text(report.spec_drift_table(outcome, c)) for c in outcome.drifted] if failed else []
    return Case(
        name=outcome.name,
        file=str(outcome.path),
        seconds=outcome.seconds,
        failure=outcome.summary if failed else None,
        error=outcome.summary if outcome.status == "error" else None,
        details="".join(tables) + "".join(f"{u.line()}\n" for u in outcome.unmatched),
    )
