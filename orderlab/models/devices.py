"""Where a run computes: a torch.device from the command line down, the CPU unless asked otherwise (CI has no GPU)."""

from __future__ import annotations

import torch

from orderlab.errors import OrderlabError

CPU = torch.device("cpu")


def validate_device(device: torch.device) -> None:
    """A one-line error for --device cuda where there is none (before any work starts)."""
    if device.type == "cuda" and not torch.cuda.is_available():
        raise OrderlabError("--device cuda: no CUDA device is available here; expected --device cpu")
