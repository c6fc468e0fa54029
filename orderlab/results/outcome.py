"""What a run hands back to the command that asked for it: plain data, and the device check every run starts with.

Shared by every kind of measurement (a sweep, a corpus): commands/run.py builds it from what results/run_writer.py
wrote.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING

from orderlab.spec.schema import Spec

if TYPE_CHECKING:
    import pandas as pd

    from orderlab.plan.shards import Unit


@dataclass(frozen=True)
class RunView:
    """What the console shows of a run, as data: report.run_tables draws it at the terminal's width."""

    title: str  # "name: description"
    dtype: str
    encodings: list[str]  # column order: encoding labels, or a pretrained model's position ablations
    swept: list[str]  # swept model fields, in column order
    summary: pd.DataFrame  # summary.csv
    digest: pd.DataFrame | None = None  # max rows and position-probe rows, for the decodability table
    corpus_threshold: float | None = None  # corpus mode: summary is per length group, against this threshold
    corpus_lm: pd.DataFrame | None = None  # corpus mode with lm_logprob: lm_summary.csv (measure/corpus_lm.py)
    precision_note: str = ""  # what each condition resolved, and what was re-measured in a finer precision
    task_summary: pd.DataFrame | None = None  # dataset inputs: the published metrics (measure/task_summary.py)


@dataclass(frozen=True)
class Outcome:
    folder: Path
    rows: int  # rows of metrics.csv
    files: list[str]  # file names written into folder, metrics.csv first
    view: RunView
    non_finite: int  # rows whose value came out NaN or inf (verdict non-finite): the run failed to measure them
    kept: list[str] = field(default_factory=list)  # CSVs whose bytes already there agreed within check's tolerances


@dataclass(frozen=True)
class ShardOutcome:
    """What `run --shard K/N` hands back: its folder, rows and units; its summary exists once the shards merge."""

    folder: Path
    rows: int  # rows of the shard's metrics.csv
    units: list[Unit]
    non_finite: int  # of the rows written whole; the merge counts those of the summaries it finishes
    shard: tuple[int, int]  # (K, N)

    def __repr__(self) -> str:
        """One line: the units are counted, not listed (a shard may hold thousands)."""
        k, n = self.shard
        return (
            f"ShardOutcome(shard={k}/{n}, folder={str(self.folder)!r}, rows={self.rows:,}, units={len(self.units):,}, "
            f"non_finite={self.non_finite:,})"
        )

    def _repr_html_(self) -> str:
        return f"<div>{escape(repr(self))}</div>"


def run_title(spec: Spec) -> str:
    """How a run is headed on the console: its name, and its question if it states one."""
    return f"{spec.name}: {spec.description}" if spec.description else spec.name
