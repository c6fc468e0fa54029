"""The library versions a results folder records: every library whose version can move one of its numbers.

torch and numpy compute every run (pandas writes its CSVs); a run of a pretrained model also loads it through
transformers (its forward pass), tokenizers (its words' sub-tokens) and safetensors (its weights), so a change of
any of these can move a committed number. `check` names each that differs from its baseline's, one line per
library (a warning beside the drift, never a failure by itself).
"""

from __future__ import annotations

import platform
from importlib import metadata

from orderlab import __version__
from orderlab.spec.schema import Spec, uses_backend

# Loaded by a pretrained model's run (model.kind pretrained or hf) besides the libraries every run uses.
PRETRAINED_LIBRARIES = ("transformers", "tokenizers", "safetensors")
NOT_INSTALLED = "not installed"


def versions(spec: Spec | None = None) -> dict[str, str]:
    """orderlab's, Python's and every number-moving library's version; with `spec`, those its model loads too."""
    import numpy
    import pandas as pd
    import torch  # lazy: `orderlab plot` writes through results/ and needs no torch

    found = {
        "orderlab": __version__,
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "pandas": pd.__version__,
        "python": platform.python_version(),
    }
    if spec is not None and uses_backend(spec):
        found.update({name: installed_version(name) for name in PRETRAINED_LIBRARIES})
    return found


def installed_version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return NOT_INSTALLED


def version_changes(recorded: dict[str, str], running: dict[str, str]) -> list[str]:
    """One phrase per library whose version differs from the baseline's: 'made with transformers 5.23.0, running
    5.24.0'; a library an older manifest did not record yet is named as such (it cannot be compared)."""
    changes = []
    for library, now in running.items():
        made = recorded.get(library)
        if made is None:
            changes.append(
                f"baseline records no {library} version (written before orderlab recorded it), running {now}"
            )
        elif made != now:
            changes.append(f"baseline made with {library} {made}, running {now}")
    return changes
