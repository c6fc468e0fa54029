"""`orderlab report`: one self-contained HTML file over results folders (report/html.py renders it)."""

from __future__ import annotations

from pathlib import Path

from orderlab.core.progress import SILENT, Phases
from orderlab.report import html


def report(results_dirs: list[Path], out: Path | None = None, *, phases: Phases = SILENT) -> Path:
    """Write the report over `results_dirs` to `out` whole (nothing else is touched; None: RESULTS_DIR/report.html
    for one run's folder, else refused); return the path written."""
    out = out or html.default_report_path(results_dirs)
    with phases.phase("report", f"writing {out} from {len(results_dirs)} folder(s)"):
        return html.write_report(results_dirs, out)
