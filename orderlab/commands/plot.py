"""`orderlab plot`: a results folder's figures, drawn and, in the formats asked for, written into its figures/."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from orderlab.core.progress import SILENT, Phases
from orderlab.report import figures
from orderlab.report.figures import Drawing


@dataclass(frozen=True)
class PlotResult:
    drawings: list[Drawing]  # every figure the folder's data supports (matplotlib figures); empty when only written
    paths: list[Path]  # the files written into RESULTS_DIR/figures/; empty when no format was asked for


def plot(
    results_dir: Path, formats: str | None = "png", *, keep_figures: bool = False, phases: Phases = SILENT
) -> PlotResult:
    """Draw the figures of `results_dir`; with formats ('png', 'png,pdf'), write them into its figures/ folder;
    with keep_figures, return them as matplotlib figures too (a notebook shows them)."""
    chosen = figures.parse_formats(formats) if formats is not None else []
    with phases.phase("figures", f"drawing the figures of {results_dir}"):
        paths = figures.plot_results(results_dir, chosen) if chosen else []
        drawn = figures.drawings(results_dir, figures.read_results(results_dir)) if keep_figures or not chosen else []
    return PlotResult(drawn, paths)
