"""HTML reports: one self-contained file over results folders (`report`, `run --html`, `compare --html`) and the
drift report of `check --html`.

A view: reads what orderlab commands wrote (CSVs, manifest.json, the spec file the manifest names, when its
sha256 is the one recorded), each through the readers of untrusted files, and never recomputes; figures come
from report/figures.py as inline SVG. Everything the page needs is in the file (CSS, a little JS, SVG, images
as data: URIs): no script, style, font or URL is fetched, so it opens offline and as a CI artifact.
Templates: orderlab/report/templates/ (jinja2, autoescaped).
Writes only the one file it is given, whole or not at all (artifact.py).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING

import jinja2
import matplotlib
import pandas as pd
from markupsafe import Markup

from orderlab import __version__
from orderlab.core.userfiles import FileProblem, read_bounded, read_text
from orderlab.errors import OrderlabError
from orderlab.metrics import reduction_of
from orderlab.report import figures as plots
from orderlab.report.shown import MARKS, first_layer_text, rate_counts, share_text, tone, verdict_text
from orderlab.report.terminal import DRIFT_ROWS_SHOWN, VERDICT_LEGEND, DriftLine, drift_lines
from orderlab.results import artifact
from orderlab.results.cells import restore_cell
from orderlab.results.manifest import MANIFEST, ManifestFile, SpecRecord, WrittenBy, read_manifest
from orderlab.results.ownership import NESTED_FILES, REPORT_MARK, recorded
from orderlab.results.tables import CSV_LIMIT
from orderlab.spec.yamlsource import MAX_SPEC_BYTES
from orderlab.vocabulary.columns import FIRST_LAYER
from orderlab.vocabulary.verdict_words import NON_FINITE

if TYPE_CHECKING:
    from orderlab.results.baseline_diff import CsvComparison, SpecCheck

REPORT_FILE = NESTED_FILES["run"]  # `run --html` writes OUT/<spec name>/report.html
ROWS_SHOWN = 1000  # rows of one table in the page; the CSV beside it holds them all
DRIFT_LINES_SHOWN = 20 * DRIFT_ROWS_SHOWN  # drifted cells per CSV in a drift report
FIGURE_SOURCES = ("metrics.csv", "attention.csv")  # drawn, not listed: thousands of rows each
SVG_METADATA: dict[str, str | None] = {"Date": None, "Creator": None, "Format": None, "Type": None}  # no RDF block
CSS_OF_WORD = {word: tone(word) for word in MARKS if tone(word)}  # a verdict's colour, as on the console
CSS_OF_WORD |= {"pass": "ok", "fail": "bad", "above chance": "strong"}
CSS_OF_STATUS = {"clean": "ok", "unchanged": "ok", "created": "info", "updated": "info"}  # else failed: "bad"


@dataclass(frozen=True)
class Cell:
    text: str
    sort: str  # what the column sorts by: the number for numeric cells, else the text
    css: str = ""  # ok, bad, nonfinite, strong: the verdict's colour


@dataclass(frozen=True)
class HtmlTable:
    name: str  # the CSV's file name
    columns: list[str]
    rows: list[list[Cell]]
    total: int  # rows in the CSV; more than len(rows) when cut at ROWS_SHOWN
    verdicts: bool  # some cells carry a verdict colour: the page offers 'order-sensitive rows only'


@dataclass(frozen=True)
class InlineFigure:
    kind: str  # metrics, displacement, decodability, task, corpus, attention
    label: str
    svg: Markup


@dataclass(frozen=True)
class FolderView:
    """One results folder as the page shows it."""

    anchor: str
    folder: str
    title: str
    written_by: str
    tables: list[HtmlTable]
    figures: list[InlineFigure]
    manifest: str  # pretty JSON
    spec: str | None  # the spec's YAML, None when its file was not found
    spec_note: str  # where the spec came from, or why it is missing or may differ
    spec_file: Path | None  # the file the spec was read from: an input of the report, never its output


# --- reading a results folder ----------------------------------------------------------------------


def read_folder(folder: Path, anchor: str) -> FolderView:
    """The view of one folder an orderlab command wrote; OrderlabError (one line) for anything else."""
    manifest = _read_manifest(folder)
    tables = [_read_table(path) for path in sorted(folder.glob("*.csv")) if path.name not in FIGURE_SOURCES]
    figures = _figures(folder)
    if not tables and not figures:
        raise OrderlabError(f"{folder}: no CSV that orderlab writes; expected the folder of an orderlab command")
    spec, spec_note, spec_file = _spec_text(folder, manifest.fields.spec)
    return FolderView(
        anchor=anchor,
        folder=str(folder),
        title=manifest.fields.spec.name if manifest.fields.spec else folder.name,
        written_by=_written_by(manifest.fields.written_by),
        tables=tables,
        figures=figures,
        manifest=json.dumps(manifest.document, indent=2, sort_keys=True),
        spec=spec,
        spec_note=spec_note,
        spec_file=spec_file,
    )


def _read_manifest(folder: Path) -> ManifestFile:
    if not folder.is_dir() or not (folder / MANIFEST).exists():
        raise OrderlabError(
            f"{folder}: not an orderlab results folder; expected a folder with manifest.json, as `orderlab run` "
            "(or compare, properties) writes"
        )
    return read_manifest(folder)


def _written_by(writer: WrittenBy | None) -> str:
    if writer is None:
        return ""
    return f"orderlab {writer.command}" + (f" of spec {writer.spec}" if writer.spec else "")


def _read_table(path: Path) -> HtmlTable:
    """A CSV as cells: a value beside its verdict column ('rope' and 'rope verdict', 'value' and 'verdict') becomes
    one coloured cell, as on the console."""
    text = read_text(path, CSV_LIMIT, "a CSV an orderlab command writes")
    try:
        header, *lines = [
            list(map(restore_cell, cells)) for cells in csv.reader(io.StringIO(text, newline=""), strict=True)
        ] or [[]]
    except csv.Error as error:
        raise FileProblem(path, f"not valid CSV ({error}); expected a CSV an orderlab command writes") from None
    return table_cells(path.name, header, lines)


def table_cells(name: str, header: list[str], lines: list[list[str]]) -> HtmlTable:
    """A table's text cells as the page shows them: the one way a summary row reads in HTML (the report's pages and
    a notebook's Result alike)."""
    verdict_of = {name: _verdict_column(name, header) for name in header}
    shown = [name for name in header if name not in verdict_of.values()]
    rows = []
    for cells in lines[:ROWS_SHOWN]:
        row = dict(zip(header, cells, strict=False))
        if reduction_of(row.get("metric", "")) == "rate":  # a share is a finding, shown as on the console
            rows.append([_rate_cell(row.get(name, ""), *rate_counts(row, name)) if verdict_of[name] else
                         _cell(row.get(name, ""), None) for name in shown])  # fmt: skip
            continue
        rows.append([_first_layer_cell(row.get(name, "")) if name.endswith(f" {FIRST_LAYER}") else
                     _cell(row.get(name, ""), row.get(verdict_of[name] or "")) for name in shown])  # fmt: skip
    verdicts = any(cell.css in ("ok", "bad", "nonfinite") for row in rows for cell in row)
    return HtmlTable(name, shown, rows, len(lines), verdicts)


NOTEBOOK_COLOURS = {"ok": "green", "bad": "#c00", "nonfinite": "#c00", "strong": ""}  # the page's CSS, inline


def frame_html(frame: pd.DataFrame, name: str = "summary.csv") -> str:
    """A frame read from an orderlab CSV as an HTML table for a notebook (`Result._repr_html_`): its cells exactly as
    the report's page shows them (table_cells), coloured inline (a notebook has not the page's CSS)."""
    header = [str(column) for column in frame.columns]
    lines = [["" if pd.isna(cell) else str(cell) for cell in row] for row in frame.itertuples(index=False)]
    table = table_cells(name, header, lines[:ROWS_SHOWN])
    head = "".join(f"<th>{escape(column)}</th>" for column in table.columns)
    body = "".join("<tr>" + "".join(_notebook_cell(cell) for cell in row) + "</tr>" for row in table.rows)
    more = f"<p>and {len(lines) - ROWS_SHOWN:,} more rows</p>" if len(lines) > ROWS_SHOWN else ""
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{more}"


def _notebook_cell(cell: Cell) -> str:
    colour = NOTEBOOK_COLOURS.get(cell.css, "")
    style = f' style="color: {colour}; white-space: nowrap"' if colour else ""
    return f"<td{style}>{escape(cell.text)}</td>"


def _verdict_column(name: str, header: list[str]) -> str | None:
    """The column holding `name`'s verdict: '<encoding> verdict' for an encoding's column, 'verdict' for 'value'."""
    candidate = "verdict" if name == "value" else f"{name} verdict"
    return candidate if candidate in header and not name.endswith("verdict") else None


def _cell(text: str, verdict: str | None) -> Cell:
    number = _number(text)
    if verdict is None:  # a plain cell, or a verdict word standing alone (properties' pass / fail)
        shown = text if number is None or text.lstrip("-").isdigit() else f"{number:.4g}"
        return Cell(shown, text if number is None else repr(number), CSS_OF_WORD.get(text, ""))
    css = CSS_OF_WORD.get(verdict, "")
    if verdict in MARKS:  # as the terminal marks it (report/shown.py)
        shown = verdict_text(float("nan") if number is None else number, verdict)
    else:  # a word without a mark ('above chance', an unjudged value's '')
        shown = text if number is None else f"{number:.4g}" + (f" ({verdict})" if verdict else "")
    return Cell(shown, repr(number) if number is not None else text, css)


def _first_layer_cell(text: str) -> Cell:
    """A first layer as the terminal shows it: '2', or '-' at no layer."""
    shown = first_layer_text(text)
    return Cell(shown, text.zfill(6) if text.isdigit() else "")


def _rate_cell(text: str, count: str | None, tied: str | None = None) -> Cell:
    """A rate's cell, unmarked: '0.42 (10/24)' when the row counts its permutations, '0.25 (1/4, 1 tie)' with ties."""
    rate, total, ties = _number(text), _number(count or ""), _number(tied or "")
    counted = int(total) if total is not None and total == total else None
    tie_count = int(ties) if ties is not None and ties == ties else None
    if rate is not None and rate != rate and tie_count and not counted:  # every answer a tie: no rate, not non-finite
        return Cell(share_text(rate, counted, tie_count), "", "")
    if rate is None or rate != rate:  # not a number, or NaN
        return _cell(text, NON_FINITE)
    return Cell(share_text(rate, counted, tie_count), repr(rate), "")


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _figures(folder: Path) -> list[InlineFigure]:
    """The figures of a run over sentences or a corpus (report/figures.py); none for comparisons and properties."""
    if not plots.has_figures(folder):
        return []
    return [
        InlineFigure(drawing.kind, drawing.label, _svg(drawing))
        for drawing in plots.drawings(folder, plots.read_results(folder))
    ]


def _svg(drawing: plots.Drawing) -> Markup:
    """The figure as an inline <svg> element: text as text (small, searchable), ids unique within the page."""
    text = io.StringIO()
    with plots.user_text(), matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": drawing.stem}):
        drawing.figure.savefig(text, format="svg", metadata=SVG_METADATA)
    svg = text.getvalue()
    return Markup(svg[svg.index("<svg") :])  # matplotlib's own markup, minus the XML prologue (it names a DTD URL)


def _spec_text(folder: Path, spec: SpecRecord | None) -> tuple[str | None, str, Path | None]:
    """The spec the manifest names and a note on it: shown only when a file it names (as given, or from the project
    holding results/NAME/) is a bounded regular file whose sha256 is the one the manifest records, so a manifest
    naming any other file (a system file, a spec edited since) never puts that file's contents into the page."""
    if spec is None or not spec.path:
        return None, "this folder's manifest names no spec file", None
    named = Path(spec.path)
    for path in dict.fromkeys([named, folder.parent.parent / named]):
        try:
            data = read_bounded(path, MAX_SPEC_BYTES)
        except (OSError, ValueError):
            continue
        if hashlib.sha256(data).hexdigest() == spec.sha256:
            return data.decode("utf-8", errors="replace"), f"{path} (sha256 as recorded: the spec of this run)", path
    return (
        None,
        (
            f"{named}: left out: no readable file there has the sha256 the manifest records ({spec.sha256[:12]}...); "
            "the spec was edited, moved or is not at hand"
        ),
        None,
    )


# --- rendering -------------------------------------------------------------------------------------


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("orderlab.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def read_views(folders: list[Path]) -> list[FolderView]:
    """One view per folder, in the order given (each becomes a section of the page)."""
    return [read_folder(folder, f"folder-{index}") for index, folder in enumerate(folders)]


def render_report(views: list[FolderView], title: str = "") -> str:
    """The page over the folders' views."""
    heading = title or "orderlab report: " + ", ".join(view.title for view in views)
    return (
        _environment()
        .get_template("report.html.j2")
        .render(mark=Markup(REPORT_MARK), title=heading, version=__version__, views=views, legend=VERDICT_LEGEND)
    )


def check_destination(out: Path, option: str = "--html", inputs: Sequence[Path] = ()) -> None:
    """Refuse a path that cannot take a report, or is one of `inputs`, before the work that feeds it starts."""
    artifact.check_destination(out, option, REPORT_FILE, inputs)


def default_report_path(folders: list[Path]) -> Path:
    """Where `orderlab report` writes without --out: one run's folder/report.html (as `run --html` does, git-ignored
    under results/); never the current folder. Over several folders, or another command's, --out is required."""
    found = recorded(folders[0]) if len(folders) == 1 and folders[0].is_dir() else None
    if found is None or found.writer.command != "run":
        raise OrderlabError(
            "--out: a report over several folders, or over one that `orderlab run` did not write, has no folder of "
            "its own; expected --out FILE.html"
        )
    return folders[0] / REPORT_FILE


def write_report(folders: list[Path], out: Path, option: str = "--out", title: str = "") -> Path:
    """Render the report over `folders` and write it to `out` whole (nothing else is touched, none of the folders'
    files is replaced)."""
    check_destination(out, option, folders)
    views = read_views(folders)
    inputs = [*folders, *(view.spec_file for view in views if view.spec_file is not None)]  # the specs it shows
    artifact.write_file(out, render_report(views, title).encode("utf-8"), option, inputs)
    return out


@dataclass(frozen=True)
class DriftSection:
    title: str  # 'drifted rows of results/x/metrics.csv'
    lines: list[DriftLine]
    left_out: int


@dataclass(frozen=True)
class SpecView:
    name: str
    path: str
    status: str
    css: str
    summary: str
    warnings: list[str]
    sections: list[DriftSection]
    unmatched: list[str]


def drift_html(outcomes: list[SpecCheck]) -> str:
    """The drift report of `check --html`: per spec its status line, warnings, and the drifted cells of each CSV."""
    specs = [
        SpecView(
            name=outcome.name,
            path=str(outcome.path),
            status=outcome.status,
            css=CSS_OF_STATUS.get(outcome.status, "bad"),
            summary=outcome.summary,
            warnings=outcome.warnings,
            sections=[_drift_section(outcome, comparison) for comparison in outcome.drifted],
            unmatched=[u.line() for u in outcome.unmatched],
        )
        for outcome in outcomes
    ]
    failed = sum(spec.css == "bad" for spec in specs)
    return (
        _environment()
        .get_template("drift.html.j2")
        .render(mark=Markup(REPORT_MARK), version=__version__, specs=specs, failed=failed)
    )


def _drift_section(outcome: SpecCheck, comparison: CsvComparison) -> DriftSection:
    what = "changed" if outcome.status == "updated" else "drifted"  # --update shows what it rewrote
    return DriftSection(f"{what} rows of {comparison.file}", *drift_lines(comparison, DRIFT_LINES_SHOWN))


def check_drift_destination(path: Path, inputs: Sequence[Path] = ()) -> None:
    """Refuse a --html path that cannot take the drift report, or is one of `inputs`, before any spec runs."""
    artifact.check_destination(path, "--html", "check.html", inputs)


def write_drift_report(path: Path, outcomes: list[SpecCheck]) -> None:
    artifact.write_file(path, drift_html(outcomes).encode("utf-8"), "--html")
