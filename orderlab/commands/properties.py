"""`orderlab properties`: measure the six properties of each encoding (measure/properties.py) and write them into
OUT/properties/ (properties.csv, manifest.json), whole; without --out, into results/properties-<settings>/, a
folder of their own, so that the committed table (results/properties/, written with `--out results`) is never
replaced by a run of other settings."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd

from orderlab.measure.properties import measure_properties
from orderlab.results.folder import staged_folder, write_csv, write_manifest
from orderlab.results.ownership import Writer, claim
from orderlab.results.paths import child
from orderlab.results.versions import versions

# Where properties go without --out: a folder per set of settings under this root.
DEFAULT_ROOT = Path("results")


def measure_and_write(
    names: list[str], max_len: int, d_model: int, n_heads: int, seed: int, out: Path | None, force: bool = False
) -> tuple[pd.DataFrame, Path]:
    """The properties table, and the folder it was written to (claimed before anything is measured): OUT/properties/,
    or without `out` results/properties-<settings>/ (settings_folder)."""
    settings = {"encodings": names, "max_len": max_len, "d_model": d_model, "n_heads": n_heads, "seed": seed}
    folder = child(out, "properties") if out is not None else child(DEFAULT_ROOT, settings_folder(settings))
    with claim(folder, Writer("properties"), force):
        frame = measure_properties(names, max_len, d_model, n_heads, seed)
        write_properties(frame, folder, settings)
    return frame, folder


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
