"""The devices a run may be asked for (`--device`, `device=`), declared once: the command line's choices (typer reads
the enum), the API's argument check and models/devices.resolve_device all read them here. Torch-free."""

from __future__ import annotations

from enum import StrEnum
from typing import Final


class DeviceChoice(StrEnum):
    """cpu, cuda, or auto: a CUDA GPU where there is one, else the CPU."""

    cpu = "cpu"
    cuda = "cuda"
    auto = "auto"


DEVICE_CHOICES: Final = tuple(choice.value for choice in DeviceChoice)
