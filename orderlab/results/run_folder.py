"""A run's results folder read back whole (metrics, summary, attention, manifest): `orderlab.api.load`'s reader.

Every file goes through the readers of files orderlab did not just write (results/tables.py for CSVs, results/
manifest.py for manifest.json), held to the columns and kinds readers use, so a foreign or edited folder is one
FileProblem line, never a KeyError later. Reads only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from orderlab.core.userfiles import FileProblem
from orderlab.errors import OrderlabError
from orderlab.results import tables
from orderlab.results.manifest import MANIFEST, ManifestFields, ManifestFile, read_manifest
from orderlab.vocabulary.columns import FIRST_LAYER

METRICS = "metrics.csv as `orderlab run` writes it"
SUMMARY = "summary.csv as `orderlab run` writes it"
ATTENTION = "attention.csv as `orderlab run` writes it, for the sentence its manifest.json names"
TOKEN_LOGPROBS = "token_logprobs.csv as `orderlab run` writes it (token_logprobs: true)"
TOKEN_KINDS = {"encoding": tables.TEXT, "sentence": tables.TEXT, "token_index": tables.INDEX, "token": tables.TEXT,
               "logprob": tables.NUMBER}  # fmt: skip
PATCHING = "patching.csv as `orderlab run` writes it (a spec's patching: block)"
PATCHING_KINDS = {**{name: tables.TEXT for name in ("encoding", "input", "source", "target", "point", "slots")},
                  "layer": tables.INDEX, "share": tables.NUMBER, "verdict": tables.TEXT}  # fmt: skip
FIRST_LAYER_KIND = tables.integer(tables.INDEX_LIMIT, blank=True)
ROW_KINDS = {"metric": tables.TEXT, "value": tables.NUMBER, "verdict": tables.TEXT}  # every run's metrics.csv


@dataclass(frozen=True)
class RunFolder:
    name: str  # the spec's name, as the manifest records it
    metrics: pd.DataFrame
    summary: pd.DataFrame
    attention: pd.DataFrame | None  # None when the run wrote no attention.csv
    manifest: dict[str, Any]  # manifest.json as read (its typed fields checked)
    token_logprobs: pd.DataFrame | None = None  # None when the run wrote no token_logprobs.csv
    patching: pd.DataFrame | None = None  # None when the spec has no patching block


def read_run_folder(folder: Path) -> RunFolder:
    """metrics.csv, summary.csv, attention.csv (if any) and manifest.json of a folder `orderlab run` wrote."""
    manifest = open_run_folder(folder)
    assert manifest.fields.spec is not None  # open_run_folder checked it
    metrics = read_metrics(folder, manifest.fields, ROW_KINDS, METRICS)
    summary_path = folder / "summary.csv"
    summary = tables.read_table(summary_path, SUMMARY)
    firsts = {str(name): FIRST_LAYER_KIND for name in summary.columns if str(name).endswith(f" {FIRST_LAYER}")}
    summary = tables.require(summary, summary_path, firsts, SUMMARY)  # one type: a whole layer, or <NA>
    swept = swept_kinds(manifest.fields)
    has_maps = os.path.lexists(folder / "attention.csv")  # a link is there, and refused by the reader, not absent
    attention = read_attention(folder, manifest.fields, swept) if has_maps else None
    tokens_path = folder / "token_logprobs.csv"
    tokens = None
    if os.path.lexists(tokens_path):
        tokens = tables.require(tables.read_table(tokens_path, TOKEN_LOGPROBS), tokens_path, swept | TOKEN_KINDS,
                                TOKEN_LOGPROBS)  # fmt: skip
    return RunFolder(manifest.fields.spec.name, metrics, summary, attention, manifest.document, tokens,
                     read_patching(folder, swept))  # fmt: skip


def read_patching(folder: Path, swept: dict[str, tables.Kind]) -> pd.DataFrame | None:
    """patching.csv held to its columns (None where the spec has no patching block)."""
    path = folder / "patching.csv"
    if not os.path.lexists(path):  # a link is there, and refused by the reader, not absent
        return None
    return tables.require(tables.read_table(path, PATCHING), path, swept | PATCHING_KINDS, PATCHING)


def open_run_folder(folder: Path) -> ManifestFile:
    """The manifest.json of a folder `orderlab run` wrote (it has metrics.csv, and its manifest names the spec and
    dtype): every reader of a results folder (api.load, the figures, the HTML report) opens it here."""
    if not (folder / "metrics.csv").is_file() or not (folder / MANIFEST).is_file():
        raise OrderlabError(f"{folder}: not a results folder; expected metrics.csv and manifest.json (orderlab run)")
    manifest = read_manifest(folder)
    if manifest.fields.spec is None or manifest.fields.dtype is None:
        raise FileProblem(manifest.path, "no `spec` or `dtype`; expected the manifest of `orderlab run`")
    return manifest


def swept_kinds(manifest: ManifestFields) -> dict[str, tables.Kind]:
    """The swept fields' columns, which lead every row (as text: a sweep's values are the spec's words)."""
    return {name: tables.TEXT for name in manifest.sweep}


def read_metrics(folder: Path, manifest: ManifestFields, kinds: dict[str, tables.Kind], expected: str) -> pd.DataFrame:
    """metrics.csv held to the swept columns and `kinds` (what its reader uses); one line naming the column if not."""
    path = folder / "metrics.csv"
    return tables.require(tables.read_table(path, expected), path, swept_kinds(manifest) | kinds, expected)


def read_attention(folder: Path, manifest: ManifestFields, swept: dict[str, tables.Kind]) -> pd.DataFrame:
    """attention.csv, its slots within the sentence and its reorderings within those the manifest records."""
    if manifest.attention is None:
        raise OrderlabError(
            f"{folder}/manifest.json: no 'attention' entry naming attention.csv's sentence and reorderings (results "
            "written by an older orderlab); expected a folder written by this orderlab: re-run the spec"
        )
    slots = len(manifest.attention.words.split()) - 1
    kinds = {"encoding": tables.TEXT, "layer": tables.INDEX, "head": tables.INDEX, "value": tables.NUMBER}
    kinds |= {"reordering": tables.integer(len(manifest.attention.reorderings))}
    kinds |= {"query": tables.integer(slots), "key": tables.integer(slots)}
    path = folder / "attention.csv"
    return tables.require(tables.read_table(path, ATTENTION), path, swept | kinds, ATTENTION)
