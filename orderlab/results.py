"""Results on disk: tidy CSVs with a fixed float format, a manifest, written whole or not at all.

A results folder is first written under a temporary name beside its destination and then renamed
into place, so an interrupted or failed run leaves the previous folder exactly as it was.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import pandas as pd

# Seven significant digits: what float32 carries, and plenty for float64 regression checks.
FLOAT_FORMAT = "%.6e"


def write_csv(frame: pd.DataFrame, path: Path) -> None:
    frame.to_csv(path, index=False, float_format=FLOAT_FORMAT, lineterminator="\n")


def write_folder_atomically(destination: Path, fill: Callable[[Path], None]) -> None:
    """Call fill(tmp_dir) to write files, then swap tmp_dir into `destination` with renames."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{destination.name}.", suffix=".tmp", dir=destination.parent))
    retired = destination.with_name(f".{destination.name}.old")
    try:
        staging.chmod(0o777 & ~_umask())  # mkdtemp makes it private; results are for everyone to read
        fill(staging)
        if destination.exists():
            shutil.rmtree(retired, ignore_errors=True)
            os.replace(destination, retired)
        os.replace(staging, destination)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        if retired.exists() and not destination.exists():
            os.replace(retired, destination)
        raise
    shutil.rmtree(retired, ignore_errors=True)


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def versions() -> dict[str, str]:
    import numpy
    import torch

    import orderlab

    return {
        "orderlab": orderlab.__version__,
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "pandas": pd.__version__,
        "python": platform.python_version(),
    }


def build_manifest(*, spec_name: str, spec_path: Path, spec_sha256: str, seed: int, dtype: str, device: str,
                   wall_seconds: float, rows: int) -> dict:  # fmt: skip
    import torch

    return {
        "spec": {"name": spec_name, "path": str(spec_path), "sha256": spec_sha256},
        "seed": seed,
        "dtype": dtype,
        "device": device,
        "torch_threads": torch.get_num_threads(),
        "versions": versions(),
        "wall_seconds": round(wall_seconds, 3),
        "rows": rows,
    }


def write_results(destination: Path, tables: dict[str, pd.DataFrame], manifest: dict) -> None:
    """Write each table as <name>.csv plus manifest.json into `destination`, atomically."""

    def fill(folder: Path) -> None:
        for name, frame in tables.items():
            write_csv(frame, folder / f"{name}.csv")
        (folder / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")

    write_folder_atomically(destination, fill)
