"""`orderlab properties`: measure the six properties of each encoding (measure/properties.py) and write them into
OUT/properties/ (properties.csv, manifest.json), whole; without an out, into results/properties-<settings>/, a
folder of their own, so that the committed table (results/properties/, written with `--out results`) is never
replaced by a run of other settings. Returned as data."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from orderlab.commands.compare import parse_encodings
from orderlab.core.progress import SILENT, Phases
from orderlab.measure.properties import measure_properties
from orderlab.results.folder import staged_folder, write_csv, write_manifest
from orderlab.results.ownership import Writer, claim
from orderlab.results.paths import child
from orderlab.results.versions import versions

# Where properties go without --out: a folder per set of settings under this root.
DEFAULT_ROOT = Path("results")


@dataclass(frozen=True)
class PropertiesResult:
    table: pd.DataFrame  # properties.csv: one row per encoding x property, with its figure and verdict
    folder: Path  # OUT/properties/, or results/properties-<settings>/
    title: str  # what was measured: N, d_model, heads


def properties(
    encodings: str = "all",
    max_len: int = 256,
    d_model: int = 64,
    n_heads: int = 4,
    seed: int = 0,
    out: Path | None = None,
    force: bool = False,
    *,
    phases: Phases = SILENT,
) -> PropertiesResult:
    """The properties of `encodings` ('a,b' or 'all') at N = max_len, written to OUT/properties/ or, without `out`,
    results/properties-<settings>/ (settings_folder), claimed before anything is measured."""
    names = parse_encodings(encodings)
    settings = {"encodings": names, "max_len": max_len, "d_model": d_model, "n_heads": n_heads, "seed": seed}
    folder = child(out, "properties") if out is not None else child(DEFAULT_ROOT, settings_folder(settings))
    with claim(folder, Writer("properties"), force):
        with phases.phase("measuring", f"measuring the properties of {len(names)} encoding(s) at N={max_len}"):
            frame = measure_properties(names, max_len, d_model, n_heads, seed)
        write_properties(frame, folder, settings)
    return PropertiesResult(frame, folder, f"properties at N={max_len}, d_model={d_model}, {n_heads} heads (float64)")


def settings_folder(settings: dict[str, object]) -> str:
    """'properties-1a2b3c4d': named by the settings' hash, so each set of settings has a folder of its own, which a
    rerun of the same settings replaces."""
    key = hashlib.sha256(json.dumps(settings, sort_keys=True).encode("utf-8")).hexdigest()[:8]
    return f"properties-{key}"


def write_properties(frame: pd.DataFrame, destination: Path, settings: dict[str, object]) -> None:
    """properties.csv and manifest.json (settings, versions) into `destination` (claimed by the caller), whole."""
    manifest = {**settings, "versions": versions(), "rows": len(frame)}
    with staged_folder(destination) as folder:
        write_csv(frame, folder / "properties.csv")
        write_manifest(folder, manifest)
