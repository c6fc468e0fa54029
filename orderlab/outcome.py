"""What a run hands back to the command that asked for it: plain data, and the device check every run starts with.

Shared by the attention-stack path (experiment.py) and the pretrained path (backends/experiment.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from orderlab.errors import OrderlabError

if TYPE_CHECKING:
    from rich.console import RenderableType


@dataclass(frozen=True)
class Outcome:
    folder: Path
    rows: int  # rows of metrics.csv
    files: list[str]  # file names written into folder, metrics.csv first
    renderables: Sequence[RenderableType]  # tables for the console, in order
    non_finite: int  # rows whose value came out NaN or inf (verdict non-finite): the run failed to measure them
    seconds: float  # wall time of the run


def check_device(device: str) -> None:
    """A one-line error for --device cuda where there is none (before any work starts)."""
    import torch  # lazy: this module is imported on the way to a run, not to validate

    if device == "cuda" and not torch.cuda.is_available():
        raise OrderlabError("--device cuda: no CUDA device is available here; expected --device cpu")
