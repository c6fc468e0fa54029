"""`orderlab properties`: measure the six properties of each encoding (measure/properties.py) and write them into
OUT/properties/ (properties.csv, manifest.json), whole."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from orderlab.measure.properties import measure_properties
from orderlab.results.folder import staged_folder, versions, write_csv, write_manifest
from orderlab.results.ownership import Writer, claim
from orderlab.results.paths import child


def measure_and_write(
    names: list[str], max_len: int, d_model: int, n_heads: int, seed: int, out: Path, force: bool = False
) -> tuple[pd.DataFrame, Path]:
    """The properties table, and the folder it was written to (claimed before anything is measured)."""
    folder = child(out, "properties")
    with claim(folder, Writer("properties"), force):
        frame = measure_properties(names, max_len, d_model, n_heads, seed)
        settings = {"encodings": names, "max_len": max_len, "d_model": d_model, "n_heads": n_heads, "seed": seed}
        write_properties(frame, folder, settings)
    return frame, folder


def write_properties(frame: pd.DataFrame, destination: Path, settings: dict[str, object]) -> None:
    """properties.csv and manifest.json (settings, versions) into `destination` (claimed by the caller), whole."""
    manifest = {**settings, "versions": versions(), "rows": len(frame)}
    with staged_folder(destination) as folder:
        write_csv(frame, folder / "properties.csv")
        write_manifest(folder, manifest)
